import { isTerminal } from '../../core/job-state.js';
import { formatMicros, usdToMicros } from '../../core/money.js';
import { MAX_BUDGET_USD } from '../../protocol/index.js';
import { BudgetCapError } from '../../store/budgets.js';
import type { TaskRow } from '../../store/types.js';
import { budgetResumer } from '../budget-pause.js';
import type { ServerContext } from '../context.js';

/**
 * Budgets per task (issue 3: "budgets per job tree, and per task"). A task may have a budget
 * of all its turns together (`tasks.budget_micros`, 0026): each turn's job tree then gets what
 * is left of it (the budget less what the earlier turns' trees spent and hold reserved), so no
 * number of comments on an assigned issue spends past it; a task without one gives each turn
 * its agent's `defaultBudgetUsd`, as before. Money in µ$.
 */

/** What is left of task `t`'s budget for its next turn, µ$ (≤ 0: nothing), or null when it has none. */
export function taskBudgetLeft(t: Pick<TaskRow, 'budgetMicros' | 'spentMicros' | 'reservedMicros'>): number | null {
  return t.budgetMicros === null ? null : t.budgetMicros - t.spentMicros - t.reservedMicros;
}

/**
 * The budget of task `t`'s next turn's tree: what is left of the task's budget, else
 * `agentDefaultMicros` (the agent's `defaultBudgetUsd`). `{ spent }` with the task's error text
 * (what it spent of what, and the command that tops it up) when nothing is left: no turn starts.
 */
export function turnBudget(t: TaskRow, agentDefaultMicros: number): { micros: number } | { spent: string } {
  const left = taskBudgetLeft(t);
  if (left === null) return { micros: agentDefaultMicros };
  if (left > 0) return { micros: left };
  const held = t.reservedMicros > 0 ? ` (and holds ${formatMicros(t.reservedMicros)} for calls in flight)` : '';
  return { spent: `task budget spent: its turns have spent ${formatMicros(t.spentMicros)} of its ${formatMicros(t.budgetMicros!)}${held}; the next turn starts after a top-up: flotilla tasks budget ${t.id} --add <USD>` };
}

/** The cap refusal's text: `what`'s budget, now `limitMicros`, would pass the cap by `addMicros` more (µ$). */
const overCap = (what: string, limitMicros: number, addMicros: number): string =>
  `${what}, whose budget would be ${formatMicros(limitMicros + addMicros)}, over the cap of $${MAX_BUDGET_USD.toLocaleString('en-US')} (${roomUnderCap(limitMicros)})`;

/**
 * What a budget of `limitMicros` (µ$) may still be raised by under the $100,000 cap, as a refused
 * top-up says it: `it is $X: at most $Y can be added`, or, at the cap, that nothing can ("at most
 * $0.000000 can be added" read as a figure worked out wrong: fresh tester).
 */
export function roomUnderCap(limitMicros: number): string {
  const room = usdToMicros(MAX_BUDGET_USD) - limitMicros;
  return room > 0 ? `it is ${formatMicros(limitMicros)}: at most ${formatMicros(room)} can be added` : `it is at the cap already: nothing can be added`;
}

/** What {@link topUpTask} answers: the task after it, or a refusal (`status`, `code`, message naming `addUsd`). */
export type TaskTopUp = { ok: true; task: TaskRow; resumed: number[] } | { ok: false; status: 404 | 409 | 400; code: string; message: string };

/**
 * Adds `addMicros` to task `task`'s budget (atomic, never past {@link MAX_BUDGET_USD}). A turn
 * still running gets the same amount on its tree's budget, and its jobs paused for budget that
 * now have room resume in their session (budget-pause.ts budgetResumer, as `flotilla budget
 * JOB --add` does); with no turn running, the task wakes when something is pending (a turn held
 * back because the budget was spent starts now).
 * Refusals: the task has no budget (409 `no_budget`: set one first), or the budget would pass
 * the cap (400 `invalid_request` naming `addUsd` and the most that can be added).
 */
export async function topUpTask(ctx: ServerContext, task: TaskRow, addMicros: number): Promise<TaskTopUp> {
  const now = ctx.now();
  const capMicros = usdToMicros(MAX_BUDGET_USD);
  const r = await ctx.store.addTaskBudget(task.id, addMicros, capMicros, now);
  if (r === null) return { ok: false, status: 404, code: 'not_found', message: `no task ${task.id}` };
  if (r === 'no_budget')
    return { ok: false, status: 409, code: 'no_budget', message: `task ${task.id} has no budget of its own (each turn gets its agent's defaultBudgetUsd): set one with flotilla tasks budget ${task.id} --set <USD>, or top up a turn's tree with flotilla budget JOB --add <USD>` };
  if ('capped' in r) return { ok: false, status: 400, code: 'invalid_request', message: overCap(`addUsd: task ${task.id}`, r.capped, addMicros) };
  const resumed = await raiseLiveTurn(ctx, r, addMicros, `task ${task.id}'s budget topped up by ${formatMicros(addMicros)}`);
  ctx.log.info('task budget topped up', { taskId: task.id, addMicros, resumed: resumed.join(',') });
  if (resumed.length === 0 && r.currentJobId === null) await ctx.tasks?.wake(task.id);
  return { ok: true, task: (await ctx.store.getTask(task.id)) ?? r, resumed };
}

/**
 * Raises the tree of task `t`'s running turn (its current job, a root) by `addMicros` and
 * resumes what now has room; the jobs resumed. Nothing when no turn runs (or its job ended).
 */
async function raiseLiveTurn(ctx: ServerContext, t: TaskRow, addMicros: number, why: string): Promise<number[]> {
  if (t.currentJobId === null) return [];
  const job = await ctx.store.getJob(t.currentJobId);
  if (!job || isTerminal(job.status)) return [];
  try {
    await ctx.store.topUpBudget(job.rootId, addMicros, ctx.now(), usdToMicros(MAX_BUDGET_USD));
  } catch (err) {
    // The tree's limit is at most the task's budget, itself within the cap: not expected.
    if (!(err instanceof BudgetCapError)) throw err;
    ctx.log.warn('task top-up: the turn tree is at the budget cap', { taskId: t.id, rootId: job.rootId });
    return [];
  }
  return budgetResumer({ store: ctx.store, bus: ctx.bus, now: ctx.now, kick: () => ctx.dispatcher.kick() })(job.rootId, 'tree', why);
}

/**
 * Before a top-up of job tree `rootId` by `addMicros` (`flotilla budget JOB --add`): when that
 * tree is a turn of a task with a budget, the task's budget grows with it ({@link noteTurnTreeTopUp}),
 * and may not pass {@link MAX_BUDGET_USD} either. The refusal's message (naming `addUsd`, the
 * task, and the most that can be added), or null when the top-up may go ahead. µ$.
 */
export async function turnTreeTopUpRefusal(ctx: ServerContext, rootId: number, addMicros: number): Promise<string | null> {
  const taskId = await ctx.store.taskOfTurnJob(rootId);
  const t = taskId === null ? null : await ctx.store.getTask(taskId);
  if (!t || t.budgetMicros === null) return null;
  const capMicros = usdToMicros(MAX_BUDGET_USD);
  if (t.budgetMicros + addMicros <= capMicros) return null;
  return overCap(`addUsd: job tree ${rootId} is a turn of task ${t.id}`, t.budgetMicros, addMicros);
}

/**
 * A top-up of job tree `rootId` by `addMicros` (`flotilla budget JOB --add`): when that tree is
 * a turn of a task with a budget, the task's budget grows by as much, so the money given to the
 * turn is not taken from the turns after it; never past {@link MAX_BUDGET_USD} (checked first by
 * {@link turnTreeTopUpRefusal}; a top-up of the task at the same moment that took the room
 * leaves it at the cap). Nothing otherwise.
 */
export async function noteTurnTreeTopUp(ctx: ServerContext, rootId: number, addMicros: number): Promise<void> {
  const taskId = await ctx.store.taskOfTurnJob(rootId);
  if (taskId === null) return;
  const capMicros = usdToMicros(MAX_BUDGET_USD);
  const r = await ctx.store.addTaskBudget(taskId, addMicros, capMicros, ctx.now());
  if (r !== null && typeof r === 'object' && 'capped' in r) await ctx.store.updateTask(taskId, null, { budgetMicros: capMicros }, ctx.now());
  if (r !== null && r !== 'no_budget') ctx.log.info('task budget raised with its turn tree', { taskId, rootId, addMicros });
}
