import type { UploadedEvent } from '../protocol/index.js';

/** An ISO-8601 UTC or offset time as runners send it (`Date.prototype.toISOString()`), e.g. `2026-12-01T07:30:00.000Z`. */
const ISO_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})$/;

/**
 * What is wrong with a `job.events` frame's events beyond their schema, or null (issue 5 item 8:
 * malformed or out-of-order frames close the connection):
 * - rseq ascending by one within the frame (consecutive, no gap): the server acknowledges the
 *   highest stored rseq, so an event sent after a higher one, or one skipped, would be
 *   acknowledged before it was ever stored and the runner would forget it (a gap between frames
 *   is the store's check, store/frame-sql.ts leavesGap; both close with 4400, and the runner's
 *   reconnect resends everything after its last ack);
 * - `at` an ISO-8601 time (it orders the job's history in every view);
 * - no `status` or `attempt.ended` event: those are the server's own record of the job's
 *   status and of a paused job's attempt end (paused-attempt-end.ts), never a runner's.
 */
export function uploadedEventsProblem(events: readonly UploadedEvent[]): string | null {
  let last = 0;
  for (let i = 0; i < events.length; i++) {
    const e = events[i]!;
    if (e.rseq <= last) return `out of order: events[${i}].rseq ${e.rseq} follows rseq ${last}; send each job's events in ascending rseq`;
    if (i > 0 && e.rseq !== last + 1) return `gap: events[${i}].rseq ${e.rseq} follows rseq ${last}; rseq ${gapText(last, e.rseq)} missing: send each job's events in consecutive rseq`;
    last = e.rseq;
    if (!ISO_TIME.test(e.at) || Number.isNaN(Date.parse(e.at))) return `bad frame: events[${i}].at ${JSON.stringify(e.at.slice(0, 40))} is not an ISO-8601 time`;
    if (e.type === 'status') return `bad frame: events[${i}] is a status event; the server records a job's status, a runner may not send one`;
    if (e.type === 'attempt.ended') return `bad frame: events[${i}] is an attempt.ended event; the server records a paused job's attempt end from its job.finished, a runner may not send one`;
  }
  return null;
}

/** The rseqs strictly between `a` and `b` (b > a + 1), as `N` or `N..M`. */
export function gapText(a: number, b: number): string {
  return b - a === 2 ? String(a + 1) : `${a + 1}..${b - 1}`;
}
