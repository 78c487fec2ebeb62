import type { JobRow, Store, TreeBudget } from '../store/types.js';

/** The Store reads {@link pathBoundedBudget} uses. */
export type BudgetPathStore = Pick<Store, 'getJob' | 'getJobBudget' | 'getTreeBudget'>;

/** µ$ a budget's own figures leave: limit − spent − reserved, never below 0. */
export function ownRoomMicros(b: TreeBudget): number {
  return Math.max(0, b.limitMicros - b.spentMicros - b.reservedMicros);
}

/**
 * The least room, µ$, among the budgets a call of `job` reserves against (store/job-budgets.ts):
 * `job`'s own sub-limit when it is a child with one, each sub-limited ancestor's, and the tree's
 * (limit − spent − reserved each, never below 0). `boundedBy` names the budget with that least
 * room: a job id (a sub-limit) or `'tree'`; on a tie the one nearest the tree. A job whose path
 * has no budget row yet counts its figures as getJobBudget/getTreeBudget create them (`now`,
 * epoch ms). Reads only.
 */
export async function leastRoomOnPath(store: BudgetPathStore, job: JobRow, now: number): Promise<{ micros: number; boundedBy: number | 'tree' }> {
  const tree = await store.getTreeBudget(job.rootId, now);
  let least: { micros: number; boundedBy: number | 'tree' } = { micros: tree ? ownRoomMicros(tree) : 0, boundedBy: 'tree' };
  // The path from `job` up, then scanned from the top: a sub-limit takes the bound only when
  // strictly smaller, so a tie goes to the budget nearer the tree.
  const chain: JobRow[] = [];
  let cur: JobRow | null = job;
  for (let depth = 0; cur && depth < 1000; depth++) {
    chain.push(cur);
    cur = cur.parentId === null ? null : await store.getJob(cur.parentId);
  }
  for (const a of chain.reverse()) {
    if (a.parentId === null || a.budgetMicros <= 0) continue;
    const sub = await store.getJobBudget(a.id, now);
    if (sub && ownRoomMicros(sub) < least.micros) least = { micros: ownRoomMicros(sub), boundedBy: a.id };
  }
  return least;
}

/**
 * Child job `job`'s sub-limit figures `own` (issue 6) as the budget views show them: its own
 * limit, spent and reserved, with `remainingMicros` the least room on its path — its own
 * (limit − spent − reserved), each sub-limited ancestor's and the tree's — since a call of the
 * job reserves against all of them (store/job-budgets.ts) and a sub-limit may be larger than
 * what is left above it. Reads only; µ$; `now` epoch ms (a budget row missing is created from
 * its job, as getJobBudget/getTreeBudget do).
 */
export async function pathBoundedBudget(store: BudgetPathStore, job: JobRow, own: TreeBudget, now: number): Promise<TreeBudget> {
  const above = job.parentId === null ? null : await store.getJob(job.parentId);
  const left = above ? Math.min(ownRoomMicros(own), (await leastRoomOnPath(store, above, now)).micros) : ownRoomMicros(own);
  return { ...own, remainingMicros: left };
}
