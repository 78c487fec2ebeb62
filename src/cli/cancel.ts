import type { Job } from '../protocol/index.js';
import type { FlotillaClient } from '../client/index.js';

/**
 * Cancels job `id` and waits while it reads `cancelling` (its runner is killing the process
 * tree) for its final status, polling every 200 ms for at most `timeoutMs` (default 60 s).
 * @returns the job as last read: `cancelled`, another terminal status if it ended first, or
 *   still `cancelling` when the runner never reported back in time.
 * @throws ApiError from the server (e.g. `not_cancellable` when the job had already ended).
 */
export async function cancelAndWait(client: FlotillaClient, id: number, timeoutMs = 60_000): Promise<Job> {
  let job = await client.cancelJob(id);
  const until = Date.now() + timeoutMs;
  while (job.status === 'cancelling' && Date.now() < until) {
    await new Promise((r) => setTimeout(r, 200));
    job = await client.getJob(id);
  }
  return job;
}
