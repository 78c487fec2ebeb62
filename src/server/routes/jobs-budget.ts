import type { Hono } from 'hono';
import { formatMicros, usdToMicros } from '../../core/money.js';
import { MAX_BUDGET_USD, TopUpRequest, type BudgetView } from '../../protocol/index.js';
import { BudgetCapError } from '../../store/budgets.js';
import type { AppEnv } from '../auth.js';
import type { ServerContext } from '../context.js';
import { apiError, idError, parseId, readBody } from '../http-util.js';
import { budgetResumer } from '../budget-pause.js';
import { roomUnderCap } from '../tasks/task-budget.js';
import { budgetJobUses, budgetsOnPath, leastRoomOf, ownRoomMicros } from '../budget-path.js';
import { budgetViewOf } from '../budget-view.js';
import { endedBudgetRefusal } from '../budget-ended.js';
import type { BudgetRaised } from '../../store/budget-resume.js';
import type { JobRow } from '../../store/types.js';
import { noteTurnTreeTopUp, turnTreeTopUpRefusal } from '../tasks/task-budget.js';

/**
 * Budgets of job trees (issue 3) and of child jobs' sub-limits (issue 6). "The budget job N
 * uses": its own sub-limit (a child with budgetMicros > 0), else its nearest sub-limited
 * ancestor's, else its tree's (server/budget-path.ts).
 * - `GET /api/jobs/:id/budget` → BudgetView (protocol/budget.ts; built by server/budget-view.ts):
 *   the figures of the budget job :id uses (`budget.jobId` set when it is a sub-limit),
 *   `remainingMicros` the least room on the job's path (every budget a call of it reserves
 *   against), `budget.boundedBy` the budget with that least room when it is another; `resumeNeeds` when the job is paused for
 *   budget: the budgets on its path short of room for its refused call; `resumed` empty.
 * - `POST /api/jobs/:id/budget` body {@link TopUpRequest} `{ "addUsd": 2 }` (admin) → adds the
 *   amount to the budget job :id uses, then the jobs paused for budget that this budget is on
 *   the path of AND whose every budget on the path (tree, sub-limits of the job and its
 *   ancestors) now has room for their refused call go back to the queue to resume in their
 *   session (`resumeSessionId` = its session id; the runner side reuses the workspace), each
 *   with a `status` event; → BudgetView with their ids in `resumed` (store/budget-resume.ts: a
 *   sibling with its own spent sub-limit stays paused). A paused job whose stopped attempt's
 *   process has not exited yet is in `resumed` too but queues only once the runner reports that
 *   exit (server/paused-exit.ts).
 *   A sub-limit's room after the top-up may not exceed the least room above it (its parent's
 *   path: the sub-limited ancestors' and the tree's), checked in the store's transaction
 *   (store/job-budgets.ts topUpJobBudget): else 422 `budget_exceeded` naming `addUsd`, the most
 *   that can be added, the budget above that bounds it with its room, and the command topping
 *   that one up.
 * Errors: bad id 400 `invalid_request`; unknown job 404 `not_found`; body 400 `invalid_json` /
 * `invalid_request` naming `addUsd`; a budget nothing can spend any more 409 `job_ended` "job N
 * ... has ended (status): ..." (server/budget-ended.ts endedBudgetRefusal): the tree's when its
 * root job has ended (succeeded, failed, cancelled, lost), a sub-limit when its child job or an
 * ancestor of that child has ended (a sub-limit applies only to its child and that child's
 * descendants: the sub-limit of an ended child is refused even while its siblings run; the
 * message names the budget above it that still takes one);
 * a top-up that would raise the tree's limit past $100,000 ({@link MAX_BUDGET_USD}, the most a
 * budget may be) 400 `invalid_request` naming `addUsd`, the cap and the most that can be added.
 * The cap is checked in the store's update (store/budgets.ts): two top-ups at once cannot pass it.
 * A tree that runs a task's turn: the task's budget (if it has one) grows by the same amount,
 * so the next turn is not short of what this one was given (server/tasks/task-budget.ts).
 */
export function mountJobBudget(app: Hono<AppEnv>, ctx: ServerContext): void {
  app.get('/api/jobs/:id/budget', async (c) => {
    const id = parseId(c.req.param('id'));
    if (id === null) return idError(c, 'id', 'a job id');
    const job = await ctx.store.getJob(id);
    if (!job) return apiError(c, 404, 'not_found', `no job ${id}`);
    const view = await budgetViewOf(ctx.store, job, ctx.now(), [], ctx.budgetHoldMs);
    if (!view) return apiError(c, 404, 'not_found', `job ${id}'s tree has no root job ${job.rootId}`);
    return c.json(view);
  });

  app.post('/api/jobs/:id/budget', async (c) => {
    const id = parseId(c.req.param('id'));
    if (id === null) return idError(c, 'id', 'a job id');
    const body = await readBody(c, TopUpRequest);
    if (!body.ok) return body.response;
    const job = await ctx.store.getJob(id);
    if (!job) return apiError(c, 404, 'not_found', `no job ${id}`);
    const now = ctx.now();
    const addMicros = usdToMicros(body.value.addUsd);
    const capMicros = usdToMicros(MAX_BUDGET_USD);
    const path = await budgetsOnPath(ctx.store, job, now);
    if (!path) return apiError(c, 404, 'not_found', `job ${id}'s tree has no root job ${job.rootId}`);
    const usesJobId = budgetJobUses(path).jobId;
    // Money nothing can spend any more is refused: the budget's owner (root, or sub-limited
    // child) or an ancestor of it has ended (budget-ended.ts).
    const ended = await endedBudgetRefusal(ctx.store, job, usesJobId);
    if (ended) return apiError(c, 409, 'job_ended', ended);
    let raised: BudgetRaised = 'tree';
    // the raised budget's limit right after this top-up's own update (the view below is read later)
    let limitAfter = 0;
    if (usesJobId !== undefined) {
      const r = await ctx.store.topUpJobBudget(usesJobId, addMicros, now);
      if (r && !r.ok) return apiError(c, 422, 'budget_exceeded', await subLimitRefusal(ctx, job, usesJobId, r.maxAddMicros, now), 'addUsd');
      if (r) {
        raised = { jobId: usesJobId };
        limitAfter = r.budget.limitMicros;
      }
    }
    if (raised === 'tree') {
      // a task turn's tree raises its task's budget too: that may not pass the cap either
      const taskCap = await turnTreeTopUpRefusal(ctx, job.rootId, addMicros);
      if (taskCap) return apiError(c, 400, 'invalid_request', taskCap, 'addUsd');
      // A sub-limit never grows past what is left above it, so only the tree's own limit can
      // pass the cap: checked in the store's update itself (two top-ups at once cannot pass it).
      try {
        const after = await ctx.store.topUpBudget(job.rootId, addMicros, now, capMicros);
        if (!after) return apiError(c, 404, 'not_found', `job ${id}'s tree has no root job ${job.rootId}`);
        limitAfter = after.limitMicros;
      } catch (err) {
        if (!(err instanceof BudgetCapError)) throw err;
        return apiError(c, 400, 'invalid_request', `addUsd: job tree ${job.rootId}'s budget would be ${formatMicros(err.limitMicros + addMicros)}, over the cap of $${MAX_BUDGET_USD.toLocaleString('en-US')} per tree (${roomUnderCap(err.limitMicros)})`, 'addUsd');
      }
      // A task turn's tree: its task's budget grows as much (server/tasks/task-budget.ts).
      await noteTurnTreeTopUp(ctx, job.rootId, addMicros);
    }
    // Only the paused jobs this budget is on the path of and that now have room resume
    // (budget-pause.ts, store/budget-resume.ts); one whose stopped process has not exited yet
    // resumes when it has (never two processes of one job at once).
    const what = raised === 'tree' ? `job tree ${job.rootId}'s budget` : `job ${raised.jobId}'s sub-limit`;
    const resumed = await budgetResumer({ store: ctx.store, bus: ctx.bus, now: ctx.now, kick: () => ctx.dispatcher.kick() })(job.rootId, raised, `${what} topped up by ${formatMicros(addMicros)}`);
    ctx.log.info('budget topped up', { rootId: job.rootId, raised: raised === 'tree' ? 'tree' : raised.jobId, addMicros, resumed: resumed.join(',') });
    // The figures after the top-up and the resumes (the job's status may have changed).
    const view = await budgetViewOf(ctx.store, (await ctx.store.getJob(id)) ?? job, ctx.now(), resumed, ctx.budgetHoldMs);
    if (!view) return apiError(c, 404, 'not_found', `job ${id}'s tree has no root job ${job.rootId}`);
    return c.json({ ...view, topUp: { addedMicros: addMicros, limitMicros: limitAfter } } satisfies BudgetView);
  });
}

/**
 * The 422 message of a refused top-up of sub-limited job `subId`'s sub-limit (the budget job
 * `job` uses): it may grow by at most `maxAddMicros` (the store's atomic check), so that its room
 * stays within the least room above it (its parent's path, server/budget-path.ts); names that
 * bounding budget and its room, the sub-limit's own room (both read now; room held for resumed
 * jobs' calls, store/budget-holds.ts, is not room and is named when there is some) and the command that
 * tops the bounding one up (or, for a tree at the {@link MAX_BUDGET_USD} cap, that it cannot grow). µ$.
 */
async function subLimitRefusal(ctx: ServerContext, job: JobRow, subId: number, maxAddMicros: number, now: number): Promise<string> {
  const sub = subId === job.id ? job : await ctx.store.getJob(subId);
  const path = sub ? await budgetsOnPath(ctx.store, sub, now) : null;
  const own = path?.at(-1);
  const bound = path ? leastRoomOf(path.slice(0, -1)) : null;
  const whose = `job ${subId}'s sub-limit${subId !== job.id ? ` (the budget job ${job.id} uses)` : ''}`;
  if (!own || !bound) return `addUsd: ${whose} can grow by at most ${formatMicros(maxAddMicros)}`;
  const boundName = bound.jobId === undefined ? `job tree ${job.rootId}'s budget` : `job ${bound.jobId}'s budget`;
  const topUp = bound.jobId === undefined ? `the tree first: flotilla budget ${job.rootId}` : `job ${bound.jobId} first: flotilla budget ${bound.jobId}`;
  // A tree at the cap cannot be topped up (the top-up would be refused): no hint to do so.
  const capMicros = usdToMicros(MAX_BUDGET_USD);
  const next = bound.jobId === undefined && bound.limitMicros >= capMicros ? `${boundName} is at the ${formatMicros(capMicros)} cap and cannot grow` : `top up ${topUp} --add <USD>`;
  // Room held for resumed jobs' calls is not left here, though a holder's own view counts its own
  // hold as left (budget-view.ts): say how much is held, or the two read as contradicting (fresh tester).
  const held = [bound.heldMicros ? `${formatMicros(bound.heldMicros)} on ${boundName}` : '', own.heldMicros ? `${formatMicros(own.heldMicros)} on job ${subId}'s own` : ''].filter(Boolean);
  const heldNote = held.length ? ` (room held for resumed jobs' calls is not left: ${held.join(', ')})` : '';
  return `addUsd: ${whose} can grow by at most ${formatMicros(maxAddMicros)}: ${boundName} has ${formatMicros(ownRoomMicros(bound))} left and job ${subId}'s own has ${formatMicros(ownRoomMicros(own))} left${heldNote}; ${next}`;
}
