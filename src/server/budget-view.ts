import type { BudgetHolder, BudgetView, JobStatus } from '../protocol/index.js';
import { budgetFigures } from '../store/budget-figures.js';
import type { JobRow, Store } from '../store/types.js';
import { budgetJobUses, budgetsOnPath, leastRoomOf, ownRoomMicros, type BudgetPathStore } from './budget-path.js';
import { resumeNeedsOf } from './budget-resume-needs.js';
import { isTerminal } from '../core/job-state.js';
import { BUDGET_HOLD_MS } from './budget-sweep.js';
import { iso } from './views.js';

/**
 * A holder as the view gives it: a queued one with the time its hold lapses (its resume +
 * `holdMs`), when the store has its resume time (a job resumed before 0028 has none).
 * The sweep lapses it at its first pass after then (every 10 s): a fresh tester read "15 min by
 * default" from a server set to 15 s, with nothing to say when this job's would lapse.
 */
function holderView(h: { jobId: number; status: string; heldMicros: number; resumedAt: number | null }, holdMs: number): BudgetHolder {
  const view: BudgetHolder = { jobId: h.jobId, status: h.status as JobStatus, heldMicros: h.heldMicros };
  if (h.status === 'queued' && h.resumedAt != null) view.lapsesAt = iso(h.resumedAt + holdMs);
  return view;
}

/**
 * The {@link BudgetView} of `job` (`GET/POST /api/jobs/:id/budget`), as the store has it now:
 * - `budget`: the figures of the budget the job uses (budget-path.ts budgetJobUses: its own
 *   sub-limit, else its nearest sub-limited ancestor's — `budget.jobId` that job — else the
 *   tree's), with `remainingMicros` the least room on the job's path (each budget's limit −
 *   spent − reserved, never below 0: a call of the job reserves against all of them) and
 *   `boundedBy` the budget with that least room when it is not the one shown and has strictly
 *   less room than the shown one's own (a tie: the one nearest the tree);
 * - `resumed`: as given (the jobs a top-up resumed);
 * - `resumeNeeds`: when the job is paused for budget, what would resume it (budget-resume-needs.ts,
 *   with the room jobs resumed earlier hold until their first call);
 * - `jobStatus`: the job's status; `pausedJobs`: the tree's other jobs paused for budget (endReason `budget`);
 * - `rootStatus`: for a job that is not its tree's root, the root's status once it has ended;
 * - `holders`: the tree's jobs holding room for the call a top-up resumed them for
 *   (store/budget-holds.ts); the figures leave out job `job`'s own hold (its calls may use it);
 * - `ownHeldMicros`: that own hold, when it has one (counted in `remainingMicros`);
 * - each queued holder's `lapsesAt`: its resume + `holdMs` (the server's budgetHoldMs, default
 *   {@link BUDGET_HOLD_MS}), when the budget sweep gives its room back unless it has started.
 * µ$; `now` epoch ms (budget rows missing are created from their jobs). Null when the job's
 * tree has no root job.
 */
export async function budgetViewOf(store: BudgetPathStore & Pick<Store, 'listBudgetPausedJobs' | 'budgetResumeHolds' | 'listBudgetHolders'>, job: JobRow, now: number, resumed: number[] = [], holdMs = BUDGET_HOLD_MS): Promise<BudgetView | null> {
  const rows = await budgetsOnPath(store, job, now);
  if (!rows) return null;
  // the jobs holding room (store/budget-holds.ts); this job's own hold is its own to spend: not counted against it here
  const holders = await store.listBudgetHolders(job.rootId);
  const own = holders.find((h) => h.jobId === job.id)?.heldMicros ?? 0;
  const path = own ? rows.map((b) => budgetFigures(b.rootId, b.jobId, b.limitMicros, b.spentMicros, b.reservedMicros, b.heldMicros ?? 0, own)) : rows;
  const uses = budgetJobUses(path);
  const least = leastRoomOf(path) ?? uses;
  const boundedBy = ownRoomMicros(least) < ownRoomMicros(uses) ? { ...(least.jobId !== undefined ? { jobId: least.jobId } : {}), limitMicros: least.limitMicros, remainingMicros: ownRoomMicros(least) } : undefined;
  const budget = { ...uses, remainingMicros: ownRoomMicros(least), ...(boundedBy ? { boundedBy } : {}) };
  // what jobs resumed earlier hold until their first call counts against this one's resume (store/budget-resume.ts)
  const resumeNeeds = job.status === 'paused' && job.endReason === 'budget' ? resumeNeedsOf(job, path, await store.budgetResumeHolds(job.rootId, job.id), await store.budgetResumeHolds(job.rootId, job.id, true)) : undefined;
  // the tree's other jobs waiting for budget: a root's view said nothing of a paused child (tester finding)
  const pausedJobs = (await store.listBudgetPausedJobs(job.rootId)).filter((id) => id !== job.id);
  // a child's view of a tree whose root has ended: that tree takes no top-up (tester finding: only the root's view said so)
  const root = job.rootId !== job.id ? await store.getJob(job.rootId) : null;
  const rootEnded = root && isTerminal(root.status) ? { rootStatus: root.status } : {};
  return { jobId: job.id, jobStatus: job.status, ...rootEnded, budget, pausedJobs, resumed, ...(resumeNeeds ? { resumeNeeds } : {}), ...(holders.length ? { holders: holders.map((h) => holderView(h, holdMs)) } : {}), ...(own > 0 ? { ownHeldMicros: own } : {}) };
}
