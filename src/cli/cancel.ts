import type { Job } from '../protocol/index.js';
import type { FlotillaClient } from '../client/index.js';

/** When {@link cancelAndWait} first says it is still waiting, ms after the cancel. */
export const CANCEL_WAIT_FIRST_MS = 1000;
/** How often it says so again after that, ms. */
export const CANCEL_WAIT_EVERY_MS = 10_000;

/**
 * Cancels job `id` and waits while it reads `cancelling` (its runner is killing the process
 * tree) for its final status, polling every 200 ms for at most `timeoutMs` (default 60 s).
 * `onWait(job, waitedMs)`, when given, is called while it is still cancelling: first after
 * {@link CANCEL_WAIT_FIRST_MS}, then every {@link CANCEL_WAIT_EVERY_MS} (a runner that is frozen
 * or cut off answers only when the server gives it up, ~20 s: the CLI said nothing meanwhile).
 * @returns the job as last read: `cancelled`, another terminal status if it ended first, or
 *   still `cancelling` when the runner never reported back in time.
 * @throws ApiError from the server (e.g. `not_cancellable` when the job had already ended).
 */
export async function cancelAndWait(client: FlotillaClient, id: number, timeoutMs = 60_000, onWait?: (job: Job, waitedMs: number) => void | Promise<void>): Promise<Job> {
  let job = await client.cancelJob(id);
  const t0 = Date.now();
  const until = t0 + timeoutMs;
  let sayAt = t0 + CANCEL_WAIT_FIRST_MS;
  while (job.status === 'cancelling' && Date.now() < until) {
    await new Promise((r) => setTimeout(r, 200));
    job = await client.getJob(id);
    if (onWait && job.status === 'cancelling' && Date.now() >= sayAt) {
      await onWait(job, Date.now() - t0);
      sayAt += sayAt === t0 + CANCEL_WAIT_FIRST_MS ? CANCEL_WAIT_EVERY_MS - CANCEL_WAIT_FIRST_MS : CANCEL_WAIT_EVERY_MS;
    }
  }
  return job;
}
