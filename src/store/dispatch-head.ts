import type { StoreCtx } from './ctx.js';
import { listDispatchState } from './dispatch-state.js';
import type { QueuedJobRef } from './types.js';

/** The head of the queue and the runners on hold, as one dispatch pass first reads them. */
export interface DispatchHead {
  /** Up to `limit` queued jobs in dispatch order (see listQueuedForDispatch). */
  queue: QueuedJobRef[];
  /** Runners a pass gives no queued job, ascending: held past `now` (epoch ms), or revoked. */
  heldRunnerIds: number[];
}

/**
 * The first page of the queue (dispatch order, at most `limit`, 1–5000) and the runners on
 * hold at `now`: the part of {@link listDispatchState} (which the dispatcher reads) about the
 * queue, with the same snapshot rule — a hold committed before a job was created is always seen
 * with that job. The holds come with an empty queue too: a new job is placed from a read made
 * before its creation (server/dispatch-new-job.ts) and must not go to a held runner.
 * @throws when limit is not 1–5000 or now is not an integer >= 0.
 */
export async function listDispatchHead(c: StoreCtx, limit: number, now: number): Promise<DispatchHead> {
  const { queue, heldRunnerIds } = await listDispatchState(c, limit, now);
  return { queue, heldRunnerIds };
}
