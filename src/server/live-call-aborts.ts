import type { Logger } from '../core/log.js';
import type { JobStatus } from '../protocol/index.js';
import type { EventBus } from './event-bus.js';

/**
 * Statuses after which a job's attempt may make no more model calls: cancelled or being
 * cancelled, lost, ended, or back in the queue (a lost attempt retried, a paused one resumed:
 * the old attempt is fenced). Not `paused`: a budget pause lets the calls already in flight
 * finish (they were reserved for; server/budget-pause.ts stops the process after a settle time).
 */
export const ENDS_CALLS: ReadonlySet<JobStatus> = new Set<JobStatus>(['cancelling', 'cancelled', 'lost', 'succeeded', 'failed', 'queued']);

/**
 * Wires the control plane's job status changes to the gateway in the same process: when a job's
 * `status` event (server/status-events.ts recordStatus: a cancel, a lost runner, a retry) says
 * its attempt is over, or its runner's `job.finished` arrives, `abortJob(jobId)` aborts the job's live model calls (gateway.ts
 * `Gateway.abortJob`: the upstream stream stops, the client's stream ends, the call is settled
 * with what was seen). Uses the bus's server-side tap, so it costs nothing per model call.
 * Calls served by another replica's gateway are not reached (the bus is per process): each
 * replica's live-call-fence.ts reads their jobs back instead.
 */
export function abortCallsOnJobEnd(bus: EventBus, abortJob: (jobId: number) => number, log: Logger): void {
  bus.tap((jobId, events) => {
    for (const ev of events) {
      // the runner's final word (job.finished; a paused job's attempt.ended) ends the attempt too
      if (ev.type !== 'job.finished' && ev.type !== 'attempt.ended' && (ev.type !== 'status' || !ENDS_CALLS.has(ev.data.status))) continue;
      const n = abortJob(jobId);
      if (n > 0) log.info('aborted the live model calls of a job', { jobId, status: ev.data.status, calls: n });
      return;
    }
  });
}
