import type { JobEvent, JobStatus } from '../protocol/index.js';
import type { JobRow, Store, SweptJob } from '../store/types.js';
import type { EventBus } from './event-bus.js';

/**
 * Stores a server-made `status` event for a job (next seq) and publishes it on the bus.
 * `now` is epoch ms; `runnerId` is included when the change concerns a runner; `lostAttempt`
 * on the `queued` of a lost attempt's retry (protocol/events.ts).
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
  bus.publish(jobId, [ev]);
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
