import type { JobEvent, JobStatus } from '../protocol/index.js';
import type { Store } from '../store/types.js';
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
