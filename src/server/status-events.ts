import type { JobEvent, JobStatus } from '../protocol/index.js';
import type { JobRow, Store, SweptJob } from '../store/types.js';
import type { EventBus } from './event-bus.js';

/**
 * Stores a server-made `status` event for a job (next seq) and publishes it on the bus.
 * `now` is epoch ms; `runnerId` is included when the change concerns a runner; `lostAttempt`
 * on the `queued` of a lost attempt's retry (protocol/events.ts).
 * A job the server itself ends `cancelled` or `failed` (cancelled while queued or paused for
 * budget, with its ancestor, or failed before any runner took it: no runner reports its end)
 * also gets its `job.finished` after the status event, with its end reason and error as stored:
 * a job has one `job.finished`, its last event (a paused attempt's end is `attempt.ended`:
 * paused-attempt-end.ts; fresh-tester finding: a job cancelled while paused ended without one
 * and a script waiting for it hung). A job `lost` with its runner ends with its status event.
 */
export async function recordStatus(
  store: Store,
  bus: EventBus,
  jobId: number,
  status: JobStatus,
  message: string,
  now: number,
  runnerId?: number,
  lostAttempt?: number,
): Promise<JobEvent> {
  const data = { status, message, ...(runnerId !== undefined ? { runnerId } : {}), ...(lostAttempt !== undefined ? { lostAttempt } : {}) };
  const ev = await store.appendServerEvent(jobId, { type: 'status', data }, now);
  const events = [ev];
  if (status === 'cancelled' || status === 'failed') {
    const job = await store.getJob(jobId);
    if (job && job.status === status) {
      const fin = { status, reason: job.endReason ?? (status === 'cancelled' ? 'cancelled' : 'error'), ...(job.error ? { error: job.error } : {}), ...(job.sessionId ? { sessionId: job.sessionId } : {}) };
      events.push(await store.appendServerEvent(jobId, { type: 'job.finished', data: fin }, now));
    }
  }
  bus.publish(jobId, events);
  return ev;
}

/**
 * Leaves the status event for each job a lost or revoked runner left behind (see
 * store.sweepStaleRunners / revokeRunner / retryLostJob: each row's `runnerId` is the runner
 * its attempt was on): `lost` "<cause>", or for a job that went back to the queue `queued`
 * "<cause>; back in the queue for a retry on any matching runner (N retries left)" with
 * `lostAttempt` = the attempt lost (a runner's recent jobs show it `lost`); an `unstarted` one
 * (assigned, never started: sweepStaleRunners) `queued` "<cause>; it never started the job: back
 * in the queue, no retry used", without `lostAttempt`. `now` epoch ms.
 */
export async function reportEndedJobs(store: Store, bus: EventBus, jobs: readonly SweptJob[], cause: (job: JobRow) => string, now: number): Promise<void> {
  for (const job of jobs) {
    const runnerId = job.runnerId ?? undefined;
    if (job.status === 'queued' && job.unstarted) {
      // Never started on that runner: requeued as a refusal would be, no attempt lost (hub-reconcile.ts).
      await recordStatus(store, bus, job.id, 'queued', `${cause(job)}; it never started the job: back in the queue, no retry used`, now, runnerId);
    } else if (job.status === 'queued') {
      const left = job.retriesLeft ?? 0;
      await recordStatus(store, bus, job.id, 'queued', `${cause(job)}; back in the queue for a retry on any matching runner (${left} ${left === 1 ? 'retry' : 'retries'} left)`, now, runnerId, job.attempt);
    } else {
      await recordStatus(store, bus, job.id, job.status, cause(job), now, runnerId);
    }
  }
}
