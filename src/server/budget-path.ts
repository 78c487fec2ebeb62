import type { JobRow, Store, TreeBudget } from '../store/types.js';

/** The Store reads {@link budgetsOnPath} uses. */
export type BudgetPathStore = Pick<Store, 'getJob' | 'getJobBudget' | 'getTreeBudget'>;

/** µ$ a budget's own figures leave: limit − spent − reserved − held (store/budget-holds.ts), never below 0. */
export function ownRoomMicros(b: TreeBudget): number {
  return Math.max(0, b.limitMicros - b.spentMicros - b.reservedMicros - (b.heldMicros ?? 0));
}

/**
 * Every budget a model call of `job` reserves against (store/job-budgets.ts), as they are now:
 * the tree's first (`jobId` absent), then each sub-limit on its path (a child job with
 * budgetMicros > 0: its ancestors', then its own) from the top down, so the last is the one the
 * job uses ({@link budgetJobUses}). A budget row missing is created from its job, as
 * getJobBudget/getTreeBudget do (`now`, epoch ms). Null when the tree has no root job.
 */
export async function budgetsOnPath(store: BudgetPathStore, job: JobRow, now: number): Promise<TreeBudget[] | null> {
  const tree = await store.getTreeBudget(job.rootId, now);
  if (!tree) return null;
  const chain: JobRow[] = [];
  let cur: JobRow | null = job;
  for (let depth = 0; cur && depth < 1000; depth++) {
    chain.push(cur);
    cur = cur.parentId === null ? null : await store.getJob(cur.parentId);
  }
  const out: TreeBudget[] = [tree];
  for (const a of chain.reverse()) {
    if (a.parentId === null || a.budgetMicros <= 0) continue;
    const sub = await store.getJobBudget(a.id, now);
    if (sub) out.push(sub);
  }
  return out;
}

/**
 * The budget a job whose path is `path` ({@link budgetsOnPath}) uses — shows, and tops up with
 * `flotilla budget JOB --add`: its own sub-limit if it has one, else its nearest sub-limited
 * ancestor's, else the tree's (`jobId` absent).
 * @throws Error when `path` is empty (it always holds the tree's).
 */
export function budgetJobUses(path: readonly TreeBudget[]): TreeBudget {
  const last = path.at(-1);
  if (!last) throw new Error('budget path: empty (it always holds the tree\'s budget)');
  return last;
}

/**
 * The budget of `path` ({@link budgetsOnPath}) with the least room ({@link ownRoomMicros}, µ$);
 * on a tie the one nearest the tree. Null for an empty path.
 */
export function leastRoomOf(path: readonly TreeBudget[]): TreeBudget | null {
  let least: TreeBudget | null = null;
  for (const b of path) if (!least || ownRoomMicros(b) < ownRoomMicros(least)) least = b;
  return least;
}

/**
 * The least room, µ$, among the budgets a call of `job` reserves against ({@link budgetsOnPath}:
 * `job`'s own sub-limit when it is a child with one, each sub-limited ancestor's, and the
 * tree's). `boundedBy` names the budget with that least room: a job id (a sub-limit) or
 * `'tree'`; on a tie the one nearest the tree. A tree without a root job has 0 room. Reads only
 * (rows missing are created, `now` epoch ms).
 */
export async function leastRoomOnPath(store: BudgetPathStore, job: JobRow, now: number): Promise<{ micros: number; boundedBy: number | 'tree' }> {
  const least = leastRoomOf((await budgetsOnPath(store, job, now)) ?? []);
  if (!least) return { micros: 0, boundedBy: 'tree' };
  return { micros: ownRoomMicros(least), boundedBy: least.jobId ?? 'tree' };
}
