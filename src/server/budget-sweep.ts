import type { Logger } from '../core/log.js';
import { isTerminal } from '../core/job-state.js';
import type { Store } from '../store/types.js';
import type { EventBus } from './event-bus.js';
import { budgetResumer } from './budget-pause.js';
import { repriceNeeds } from './budget-reprice.js';
import { recordStatus } from './status-events.js';
import type { PriceTable } from '../gateway/prices.js';

/** How often the sweeper looks at the trees whose budgets wait on something, ms. */
export const BUDGET_SWEEP_INTERVAL_MS = 10_000;

/**
 * How long a job a top-up resumed may wait to start before the room it holds lapses, ms (15 min;
 * FLOTILLA_GATEWAY_BUDGET_HOLD_MS, gateway/config.ts budgetHoldMs). Long enough for a busy
 * runner to take it (a resume is pinned to its session's runner), short enough that a runner
 * gone for good does not keep the tree's paused jobs waiting for a top-up nobody knows is needed.
 */
export const BUDGET_HOLD_MS = 15 * 60_000;

/** Trees looked at per pass (root ids ascending): the rest wait for the next pass, which goes on after the last. */
const TREES_PER_PASS = 200;

/**
 * The periodic check behind every way room on a budget comes back (issue 3). A resumed job's
 * hold ends when its call is admitted or when it ends (server/budget-pause.ts resumeHoldEnder,
 * endedHoldTap), but a job can leave its hold some way no hook sees (fresh tester: a runner
 * revoked while its resumed job was queued made the job `lost` with no event the tap reads,
 * and its room stayed held, its paused siblings paused); and a held amount written again by a
 * refusal (store/budgets.ts) resumes nobody. So every {@link BUDGET_SWEEP_INTERVAL_MS}, for each
 * tree whose budgets hold room or that has jobs paused for budget
 * (store.listBudgetWaitingTrees): the needs of its paused and resumed jobs are priced again at
 * `o.prices` (budget-reprice.ts: a price changed since they paused), the holds of resumed jobs
 * still queued `o.budgetHoldMs` (default {@link BUDGET_HOLD_MS}) after their resume lapse
 * (store.lapseBudgetHolds: a resume pinned to a runner that is gone; a status event says so on
 * the job), the held room is written again from the jobs (store.syncBudgetHolds; nothing is
 * written when it is right), and, when the tree's root is live and jobs of it are paused for
 * budget, the resume rule runs as for a top-up of the tree ({@link budgetResumer}: only jobs
 * whose refused call fits resume; a job whose need is not known is left to a top-up, or dust
 * would resume it and pause it again at every check). Returns a function the sweeper calls each pass (it runs at most once per `intervalMs`, and looks at
 * {@link TREES_PER_PASS} trees, going on from the last one the pass before looked at); errors are
 * logged, one tree's without stopping the others.
 */
export function budgetWaitSweep(o: { store: Store; bus: EventBus; log: Logger; now: () => number; kick?: () => void; prices?: () => Promise<PriceTable>; budgetHoldMs?: number }, intervalMs = BUDGET_SWEEP_INTERVAL_MS): () => Promise<void> {
  const holdMs = o.budgetHoldMs ?? BUDGET_HOLD_MS;
  const holdText = holdMs % 60_000 === 0 ? `${holdMs / 60_000} min` : `${Math.round(holdMs / 1000)} s`;
  let last = Number.NEGATIVE_INFINITY;
  // the last root id looked at: past TREES_PER_PASS waiting trees, each pass goes on from there
  let after = 0;
  return async () => {
    const t = o.now();
    if (t - last < intervalMs) return;
    last = t;
    let prices: PriceTable | null = null;
    let trees: number[] = [];
    try {
      prices = o.prices ? await o.prices() : null;
      trees = await o.store.listBudgetWaitingTrees(TREES_PER_PASS, after);
    } catch (err) {
      o.log.error('budget: the check of trees waiting for budget failed', { error: (err as Error).message });
      return;
    }
    after = trees.length < TREES_PER_PASS ? 0 : trees.at(-1)!;
    for (const rootId of trees) {
      try {
        // needs at today's prices first (budget-reprice.ts): the rule below reads them
        const repriced = prices ? await repriceNeeds(o.store, prices, rootId) : 0;
        if (repriced) o.log.info('budget: needs of paused or resumed jobs priced again (a price changed)', { rootId, jobs: repriced });
        // a resumed job that has not started within budgetHoldMs gives its room back (it stays queued)
        const lapsed = await o.store.lapseBudgetHolds(rootId, Math.max(0, t - holdMs));
        for (const id of lapsed) {
          await recordStatus(o.store, o.bus, id, 'queued', `not started ${holdText} after its resume: the budget room it held for its call is given back to its tree (FLOTILLA_GATEWAY_BUDGET_HOLD_MS); still queued, its next call is reserved as any job's`, t);
        }
        if (lapsed.length) o.log.info('budget: held room of resumed jobs that did not start given back', { rootId, jobs: lapsed.join(',') });
        if (await o.store.syncBudgetHolds(rootId)) o.log.info('budget: held room written again from its jobs (a holder ended without its call)', { rootId });
        const root = await o.store.getJob(rootId);
        if (!root || isTerminal(root.status)) continue;
        if (!(await o.store.listBudgetPausedJobs(rootId)).length) continue;
        const resumed = await budgetResumer(o)(rootId, 'tree', `job tree ${rootId}'s budget has room for the refused call (room held for another job came back)`, true);
        if (resumed.length) o.log.info('budget: room came back: resuming', { rootId, resumed: resumed.join(',') });
      } catch (err) {
        // one tree's failure does not stop the others
        o.log.error('budget: the check of a tree waiting for budget failed', { rootId, error: (err as Error).message });
      }
    }
  };
}
