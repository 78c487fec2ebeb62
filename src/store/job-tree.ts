import { TERMINAL_STATUSES, type JobStatus } from '../protocol/index.js';
import { num, toJobRow } from './codec.js';
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

/**
 * Which of `jobIds` have a child that has not ended (any status but the terminal ones,
 * `cancelling` included): a parent waiting on its children (issue 6), which the runner's idle
 * limit does not count as blocked on input (server/model-activity.ts). In no particular order,
 * each id once. One query on the `jobs_parent` index; at most 1000 ids.
 * @throws Error when an id is not a positive integer or there are more than 1000.
 */
export async function listJobsWithLiveChildren(c: StoreCtx, jobIds: readonly number[]): Promise<number[]> {
  if (jobIds.length === 0) return [];
  if (jobIds.length > 1000) throw new Error(`store: at most 1000 job ids per call, got ${jobIds.length}`);
  for (const id of jobIds) assertInt('jobId', id, 1);
  const rows = await c.db
    .selectFrom('jobs')
    .select('parent_id')
    .distinct()
    .where('parent_id', 'in', [...new Set(jobIds)])
    .where('status', 'not in', [...TERMINAL_STATUSES])
    .execute();
  return rows.map((r) => num(r.parent_id));
}

/** A job left running by its parent's end (see {@link listOrphanedJobs}). */
export interface OrphanedJob {
  id: number;
  parentId: number;
  /** The parent's terminal status (succeeded, failed, cancelled, lost). */
  parentStatus: JobStatus;
}

/**
 * Jobs that have not ended (queued, assigned, running, paused; not `cancelling`, which is
 * already on its way) whose parent has ended (issue 6: the parent waits for and collects its
 * children; one that ended without them leaves nobody to collect their results, while they
 * still spend the tree's budget). Oldest first, at most `limit` (1–1000). One query joining a
 * job to its parent by primary key.
 * @throws Error when limit is out of range.
 */
export async function listOrphanedJobs(c: StoreCtx, limit: number): Promise<OrphanedJob[]> {
  assertInt('limit', limit, 1);
  if (limit > 1000) throw new Error(`store: limit must be at most 1000, got ${limit}`);
  const rows = await c.db
    .selectFrom('jobs as c')
    .innerJoin('jobs as p', 'p.id', 'c.parent_id')
    .select(['c.id as id', 'c.parent_id as parentId', 'p.status as parentStatus'])
    .where('c.status', 'in', ['queued', 'assigned', 'running', 'paused'])
    .where('p.status', 'in', [...TERMINAL_STATUSES])
    .orderBy('c.id', 'asc')
    .limit(limit)
    .execute();
  return rows.map((r) => ({ id: num(r.id), parentId: num(r.parentId), parentStatus: r.parentStatus as JobStatus }));
}
