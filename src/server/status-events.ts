import type { JobEvent, JobStatus } from '../protocol/index.js';
import type { JobRow, Store } from '../store/types.js';
import type { EventBus } from './event-bus.js';

/**
 * Stores a server-made `status` event for a job (next seq) and publishes it on the bus.
 * `now` is epoch ms; `runnerId` is included when the change concerns a runner.
 */
export async function recordStatus(
  store: Store,
  bus: EventBus,
  jobId: number,
  status: JobStatus,
  message: string,
  now: number,
  runnerId?: number,
): Promise<JobEvent> {
  const ev = await store.appendServerEvent(jobId, { type: 'status', data: { status, message, ...(runnerId !== undefined ? { runnerId } : {}) } }, now);
  bus.publish(jobId, [ev]);
  return ev;
}

/**
 * Leaves the status event for each job a lost or revoked runner left behind (see
 * store.sweepStaleRunners / revokeRunner): `lost` "<cause>", or for a job that went back to
 * the queue `queued` "<cause>; back in the queue for a retry on any matching runner (N retries left)". `now` epoch ms.
 */
export async function reportEndedJobs(store: Store, bus: EventBus, jobs: readonly JobRow[], cause: (job: JobRow) => string, now: number): Promise<void> {
  for (const job of jobs) {
    const runnerId = job.runnerId ?? undefined;
    if (job.status === 'queued') {
      const left = job.retriesLeft ?? 0;
      await recordStatus(store, bus, job.id, 'queued', `${cause(job)}; back in the queue for a retry on any matching runner (${left} ${left === 1 ? 'retry' : 'retries'} left)`, now, runnerId);
    } else {
      await recordStatus(store, bus, job.id, job.status, cause(job), now, runnerId);
    }
  }
}
