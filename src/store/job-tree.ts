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

/** What a job's children tell its idle limit ({@link childActivity}). */
export interface ChildActivity {
  jobId: number;
  /** Children not ended (any status but the terminal ones, `cancelling` and `paused` included). */
  liveChildren: number;
  /** When its last child to end ended (epoch ms), or null when none has. */
  lastChildEndedAt: number | null;
}

/**
 * For each of `jobIds` that has children: how many have not ended, and when the last one that
 * ended did. A parent waiting on its children (issue 6) is not blocked on input while one lives,
 * and its idle time counts from the moment the last one ended, not from the runner's last
 * heartbeat (server/model-activity.ts; a parent polling a child was ended 0–2 s after the child
 * finished: fresh-tester finding). Jobs without children are left out; no particular order. One
 * grouped query on the `jobs_parent` index; at most 1000 ids.
 * @throws Error when an id is not a positive integer or there are more than 1000.
 */
export async function childActivity(c: StoreCtx, jobIds: readonly number[]): Promise<ChildActivity[]> {
  if (jobIds.length === 0) return [];
  if (jobIds.length > 1000) throw new Error(`store: at most 1000 job ids per call, got ${jobIds.length}`);
  for (const id of jobIds) assertInt('jobId', id, 1);
  const terminal = [...TERMINAL_STATUSES];
  const rows = await c.db
    .selectFrom('jobs')
    .select((eb) => [
      'parent_id',
      eb.fn.sum<number>(eb.case().when('status', 'in', terminal).then(0).else(1).end()).as('live'),
      eb.fn.max(eb.case().when('status', 'in', terminal).then(eb.ref('finished_at')).else(null).end()).as('last_end'),
    ])
    .where('parent_id', 'in', [...new Set(jobIds)])
    .groupBy('parent_id')
    .execute();
  return rows.map((r) => ({ jobId: num(r.parent_id), liveChildren: num(r.live), lastChildEndedAt: r.last_end === null ? null : num(r.last_end) }));
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
