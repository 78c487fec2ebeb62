import type { UploadedEvent } from '../protocol/index.js';

/** An ISO-8601 UTC or offset time as runners send it (`Date.prototype.toISOString()`), e.g. `2026-12-01T07:30:00.000Z`. */
const ISO_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})$/;

/**
 * What is wrong with a `job.events` frame's events beyond their schema, or null (issue 5 item 8:
 * malformed or out-of-order frames close the connection):
 * - rseq strictly ascending within the frame: the server acknowledges the highest stored rseq,
 *   so an event sent after a higher one would be acknowledged before it was ever stored;
 * - `at` an ISO-8601 time (it orders the job's history in every view);
 * - no `status` event: those are the server's own record of the job's status, never a runner's.
 */
export function uploadedEventsProblem(events: readonly UploadedEvent[]): string | null {
  let last = 0;
  for (let i = 0; i < events.length; i++) {
    const e = events[i]!;
    if (e.rseq <= last) return `out of order: events[${i}].rseq ${e.rseq} follows rseq ${last}; send each job's events in ascending rseq`;
    last = e.rseq;
    if (!ISO_TIME.test(e.at) || Number.isNaN(Date.parse(e.at))) return `bad frame: events[${i}].at ${JSON.stringify(e.at.slice(0, 40))} is not an ISO-8601 time`;
    if (e.type === 'status') return `bad frame: events[${i}] is a status event; the server records a job's status, a runner may not send one`;
  }
  return null;
}
