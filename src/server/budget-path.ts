import type { JobRow, Store, TreeBudget } from '../store/types.js';

/** The Store reads {@link pathBoundedBudget} uses. */
export type BudgetPathStore = Pick<Store, 'getJob' | 'getJobBudget' | 'getTreeBudget'>;

/** µ$ a budget's own figures leave: limit − spent − reserved, never below 0. */
export function ownRoomMicros(b: TreeBudget): number {
  return Math.max(0, b.limitMicros - b.spentMicros - b.reservedMicros);
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
  let left = ownRoomMicros(own);
  let cur = job.parentId;
  for (let depth = 0; cur !== null && depth < 1000; depth++) {
    const a = await store.getJob(cur);
    if (!a) break;
    const sub = a.parentId !== null && a.budgetMicros > 0 ? await store.getJobBudget(a.id, now) : null;
    if (sub) left = Math.min(left, ownRoomMicros(sub));
    cur = a.parentId;
  }
  const tree = await store.getTreeBudget(job.rootId, now);
  if (tree) left = Math.min(left, ownRoomMicros(tree));
  return { ...own, remainingMicros: left };
}
