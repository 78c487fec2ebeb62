import { toJobRow } from './codec.js';
import { assertInt, type StoreCtx } from './ctx.js';
import type { JobRow } from './types.js';

/**
 * Every job of one job tree (issue 6): the root (`id = rootId`) and all its descendants, by id
 * ascending (so a parent always comes before its children). Empty when no job has this root.
 * One indexed query on `root_id`.
 * @throws Error when rootId is not a positive integer.
 */
export async function listTreeJobs(c: StoreCtx, rootId: number): Promise<JobRow[]> {
  assertInt('rootId', rootId, 1);
  const rows = await c.db.selectFrom('jobs').selectAll().where('root_id', '=', rootId).orderBy('id', 'asc').execute();
  return rows.map((r) => toJobRow(c.codec, r));
}
