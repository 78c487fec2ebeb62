import type { Hono } from 'hono';
import { formatMicros, usdToMicros } from '../../core/money.js';
import { MAX_BUDGET_USD, TopUpRequest, type BudgetView } from '../../protocol/index.js';
import { isTerminal } from '../../core/job-state.js';
import { BudgetCapError } from '../../store/budgets.js';
import type { AppEnv } from '../auth.js';
import type { ServerContext } from '../context.js';
import { apiError, idError, parseId, readBody } from '../http-util.js';
import { budgetResumer } from '../budget-pause.js';
import { pathBoundedBudget } from '../budget-path.js';
import type { BudgetRaised } from '../../store/budget-resume.js';

/**
 * Budgets of job trees (issue 3):
 * - `GET /api/jobs/:id/budget` → {@link BudgetView} of the job's tree (`resumed` empty).
 * - `POST /api/jobs/:id/budget` body {@link TopUpRequest} `{ "addUsd": 2 }` (admin) → adds the
 *   amount to the tree's limit (or to job :id's sub-limit, below), then the jobs paused for
 *   budget that this budget is on the path of AND whose every budget on the path (tree,
 *   sub-limits of the job and its ancestors) now has room for their refused call go back to the
 *   queue to resume in their session (`resumeSessionId` = its session id; the runner side reuses
 *   the workspace), each with a `status` event; → BudgetView with their ids in `resumed`
 *   (store/budget-resume.ts: a sibling with its own spent sub-limit stays paused). A
 *   paused job whose stopped attempt's process has not exited yet is in `resumed` too but
 *   queues only once the runner reports that exit (server/paused-exit.ts).
 * Issue 6: for a child job with a sub-limit (its budgetMicros > 0), GET returns that sub-limit
 * (`budget.jobId` set; `remainingMicros` the least room on the job's path — its own, each
 * sub-limited ancestor's, the tree's: server/budget-path.ts) and POST raises it — never past what the tree (and each sub-limited
 * ancestor) has left: 422 `budget_exceeded` naming `addUsd` and the most that can be added.
 * A child sharing its tree's budget shows and tops up the tree's.
 * Errors: bad id 400 `invalid_request`; unknown job 404 `not_found`; body 400 `invalid_json` /
 * `invalid_request` naming `addUsd`; a tree whose root job has ended (succeeded, failed,
 * cancelled, lost: nothing of it can spend any more) 409 `job_ended` "job N has ended (status)";
 * a top-up that would raise the tree's limit past $100,000 ({@link MAX_BUDGET_USD}, the most a
 * budget may be) 400 `invalid_request` naming `addUsd`, the cap and the most that can be added.
 * The cap is checked in the store's update (store/budgets.ts): two top-ups at once cannot pass it.
 */
export function mountJobBudget(app: Hono<AppEnv>, ctx: ServerContext): void {
  app.get('/api/jobs/:id/budget', async (c) => {
    const id = parseId(c.req.param('id'));
    if (id === null) return idError(c, 'id', 'a job id');
    const job = await ctx.store.getJob(id);
    if (!job) return apiError(c, 404, 'not_found', `no job ${id}`);
    const own = job.parentId !== null ? await ctx.store.getJobBudget(job.id, ctx.now()) : null;
    if (own) return c.json({ jobId: id, budget: await pathBoundedBudget(ctx.store, job, own, ctx.now()), resumed: [] } satisfies BudgetView);
    const budget = await ctx.store.getTreeBudget(job.rootId, ctx.now());
    if (!budget) return apiError(c, 404, 'not_found', `job ${id}'s tree has no root job ${job.rootId}`);
    const view: BudgetView = { jobId: id, budget, resumed: [] };
    return c.json(view);
  });

  app.post('/api/jobs/:id/budget', async (c) => {
    const id = parseId(c.req.param('id'));
    if (id === null) return idError(c, 'id', 'a job id');
    const body = await readBody(c, TopUpRequest);
    if (!body.ok) return body.response;
    const job = await ctx.store.getJob(id);
    if (!job) return apiError(c, 404, 'not_found', `no job ${id}`);
    const root = job.rootId === job.id ? job : await ctx.store.getJob(job.rootId);
    if (root && isTerminal(root.status)) {
      const which = root.id === id ? '' : ` (the root of job ${id}'s tree)`;
      return apiError(c, 409, 'job_ended', `job ${root.id}${which} has ended (${root.status}): its tree spends nothing more, so it takes no top-up`);
    }
    const now = ctx.now();
    const addMicros = usdToMicros(body.value.addUsd);
    const capMicros = usdToMicros(MAX_BUDGET_USD);
    let budget = null;
    let raised: BudgetRaised = 'tree';
    if (job.parentId !== null) {
      const r = await ctx.store.topUpJobBudget(job.id, addMicros, now);
      if (r && !r.ok) {
        return apiError(c, 422, 'budget_exceeded', `addUsd: job ${id}'s sub-limit can grow by at most ${formatMicros(r.maxAddMicros)} (what job tree ${job.rootId} has left); top up the tree first: flotilla budget ${job.rootId} --add <USD>`, 'addUsd');
      }
      if (r) {
        budget = await pathBoundedBudget(ctx.store, job, r.budget, now);
        raised = { jobId: job.id };
      }
    }
    if (!budget) {
      // A sub-limit never grows past what the tree has left, so only the tree's own limit can
      // pass the cap: checked in the store's update itself (two top-ups at once cannot pass it).
      try {
        budget = await ctx.store.topUpBudget(job.rootId, addMicros, now, capMicros);
      } catch (err) {
        if (!(err instanceof BudgetCapError)) throw err;
        const most = formatMicros(Math.max(0, capMicros - err.limitMicros));
        return apiError(c, 400, 'invalid_request', `addUsd: job tree ${job.rootId}'s budget would be ${formatMicros(err.limitMicros + addMicros)}, over the cap of $${MAX_BUDGET_USD.toLocaleString('en-US')} per tree (it is ${formatMicros(err.limitMicros)}: at most ${most} can be added)`, 'addUsd');
      }
    }
    if (!budget) return apiError(c, 404, 'not_found', `job ${id}'s tree has no root job ${job.rootId}`);
    // Only the paused jobs this budget is on the path of and that now have room resume
    // (budget-pause.ts, store/budget-resume.ts); one whose stopped process has not exited yet
    // resumes when it has (never two processes of one job at once).
    const what = raised === 'tree' ? `job tree ${job.rootId}'s budget` : `job ${job.id}'s sub-limit`;
    const resumed = await budgetResumer({ store: ctx.store, bus: ctx.bus, now: ctx.now, kick: () => ctx.dispatcher.kick() })(job.rootId, raised, `${what} topped up by ${formatMicros(addMicros)}`);
    ctx.log.info('budget topped up', { rootId: job.rootId, addMicros, resumed: resumed.join(',') });
    const view: BudgetView = { jobId: id, budget, resumed };
    return c.json(view);
  });
}
