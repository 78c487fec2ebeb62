import { formatMicros } from '../core/money.js';
import type { Logger } from '../core/log.js';
import type { Store, TreeBudget } from '../store/types.js';

/**
 * Jobs paused by a budget refusal that only calls in flight caused: the tree's spent plus the
 * refused call's worst case fit its limit, but not with the other calls' live reservations on
 * top (issue 3's concurrency rule: "at most 2 reach the upstream, the others get the budget
 * error at once"). The refusal and the pause stay as they are; such a job must not then wait
 * for a top-up that nothing calls for. Once the tree has room again — the budget's remaining
 * (limit − spent − still reserved) is at least the refused call's worst case, after the calls
 * in flight settled at their real (lower) cost — `resume(rootId, why)` is called, and the
 * control plane resumes the tree's budget-paused jobs as a top-up does (server/budget-pause.ts).
 *
 * Checked: at once after the pause (a settle may have come first), after every settle of a
 * watched tree in this process (budget.ts {@link watchSettles}: one Map lookup per settle, only
 * when a gateway watches), and every {@link RECHECK_MS} while any job waits (one timer for all,
 * only then: it catches reservations settled by another replica or released by the sweeper). A
 * tree with no reservation left and still no room needs a top-up: its waiters are dropped. A
 * refusal where even spent + worst case exceeds the limit is never watched.
 */

/** How often waiting trees are checked when no settle of this process tells (ms). */
export const RECHECK_MS = 2_000;

/** What the checks read: the tree's budget, and a child's sub-limit when that refused. */
export type WaiterStore = Pick<Store, 'getTreeBudget'> & Partial<Pick<Store, 'getJobBudget'>>;

/** One refused call whose job waits: the worst case it needs, and the sub-limit that refused it (if not the tree's). */
interface Waiter {
  jobId: number;
  worst: number;
  budgetJobId?: number;
}

/** True when the refusal of a call costing up to `worst` came only from other calls' reservations. */
export function refusedByCallsInFlight(b: TreeBudget | null, worst: number): boolean {
  return b !== null && b.reservedMicros > 0 && b.spentMicros + worst <= b.limitMicros;
}

/** See the module comment. One per gateway. */
export class BudgetWaiters {
  private readonly byRoot = new Map<number, Waiter[]>();
  /** Roots being checked now, and whether another check was asked for meanwhile. */
  private readonly checking = new Map<number, boolean>();
  private timer: ReturnType<typeof setInterval> | null = null;

  constructor(
    private readonly store: WaiterStore,
    private readonly resume: (rootId: number, why: string) => Promise<void>,
    private readonly log: Logger,
    private readonly now: () => number = Date.now,
  ) {}

  /** Jobs waiting (tests, diagnostics). */
  get size(): number {
    let n = 0;
    for (const w of this.byRoot.values()) n += w.length;
    return n;
  }

  /**
   * A call of job `jobId` (tree `rootId`) costing up to `worst` µ$ was refused with `budget`
   * (the figures that refused it) and its job was paused: watched when only calls in flight
   * caused it, then checked at once. @returns whether it is watched.
   */
  refused(jobId: number, rootId: number, worst: number, budget: TreeBudget | null): boolean {
    if (!refusedByCallsInFlight(budget, worst)) return false;
    const w: Waiter = { jobId, worst };
    if (budget!.jobId !== undefined) w.budgetJobId = budget!.jobId;
    const list = this.byRoot.get(rootId);
    if (list) list.push(w);
    else this.byRoot.set(rootId, [w]);
    this.timer ??= setInterval(() => {
      for (const root of [...this.byRoot.keys()]) this.settled(root);
    }, RECHECK_MS).unref();
    this.settled(rootId);
    return true;
  }

  /** A reservation of tree `rootId` was settled (or may have been): checks its waiters, if any. */
  settled(rootId: number): void {
    if (!this.byRoot.has(rootId)) return;
    if (this.checking.has(rootId)) {
      this.checking.set(rootId, true);
      return;
    }
    this.checking.set(rootId, false);
    void this.check(rootId)
      .catch((err: unknown) => this.log.error('gateway: could not check a budget for paused jobs', { root: rootId, error: (err as Error).message }))
      .finally(() => {
        const again = this.checking.get(rootId) === true;
        this.checking.delete(rootId);
        if (again) this.settled(rootId);
      });
  }

  /** Stops the recheck timer (the waiters stay; a settle still checks them). */
  close(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  private async check(rootId: number): Promise<void> {
    const list = this.byRoot.get(rootId);
    if (!list || list.length === 0) return;
    const now = this.now();
    const tree = await this.store.getTreeBudget(rootId, now);
    if (!tree) return this.drop(rootId);
    let room = false;
    let moving = tree.reservedMicros > 0;
    for (const w of list) {
      let fits = tree.remainingMicros >= w.worst;
      if (fits && w.budgetJobId !== undefined && this.store.getJobBudget) {
        const own = await this.store.getJobBudget(w.budgetJobId, now);
        if (own) {
          fits = own.remainingMicros >= w.worst;
          moving ||= own.reservedMicros > 0;
        }
      }
      if (fits) {
        room = true;
        break;
      }
    }
    if (room) {
      // Every budget-paused job of the tree resumes (as after a top-up); one that still does not
      // fit is refused and paused again.
      this.drop(rootId);
      const why = `the calls in flight in job tree ${rootId} settled: ${formatMicros(tree.remainingMicros)} of its budget left`;
      this.log.info('gateway: a tree has budget again after its calls in flight settled', { root: rootId, remainingMicros: tree.remainingMicros });
      await this.resume(rootId, why);
      return;
    }
    // No reservation left to settle and still no room: only a top-up helps now.
    if (!moving) this.drop(rootId);
  }

  private drop(rootId: number): void {
    this.byRoot.delete(rootId);
    if (this.byRoot.size === 0) this.close();
  }
}
