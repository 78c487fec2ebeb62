import type { Context } from 'hono';
import type { AgentDefinition, CreateJobRequest } from '../protocol/index.js';
import { ACTIVE_STATUSES } from '../core/job-state.js';
import { treeLimitsFromEnv } from '../core/job-tree.js';
import { mergeSelector } from '../core/labels.js';
import { formatMicros, usdToMicros } from '../core/money.js';
import { TreeLimitError } from '../store/jobs.js';
import type { JobRow } from '../store/types.js';
import type { ServerContext } from './context.js';
import { apiError } from './http-util.js';
import { leastRoomOnPath } from './budget-path.js';
import { recordStatus } from './status-events.js';
import { jobView } from './views.js';

let envLimits: ReturnType<typeof treeLimitsFromEnv> | null = null;

/** A short name for a child's work: its input's `name`, else the last part of its `repo`; undefined when neither. */
export function childLabel(input: Record<string, unknown>): string | undefined {
  if (typeof input.name === 'string' && input.name) return input.name.slice(0, 100);
  if (typeof input.repo === 'string' && input.repo) return input.repo.replace(/\.git$/, '').replace(/\/+$/, '').split(/[/:]/).pop()?.slice(0, 100) || undefined;
  return undefined;
}

/**
 * `POST /api/jobs` called with a job token (issue 6): creates a child of `parent` (the calling
 * job, `assigned`/`running`) running `agent`, after the route checked the agent, effort and
 * input. The child joins the parent's tree: same rootId, so the same tree budget and the same
 * cancel. Refusals (nothing stored):
 * - 422 `invalid_request` field `resumeJobId`: a child cannot resume another session;
 * - 422 `tree_limit`: the child would be deeper than the tree's maxDepth or the tree would
 *   hold more than maxJobs jobs (ctx.treeLimits, default FLOTILLA_TREE_MAX_DEPTH=3 /
 *   FLOTILLA_TREE_MAX_JOBS=50); the message names the limit and its figures. Checked by the
 *   store in the insert's transaction under the root row's lock, so replicas never overshoot;
 * - 422 `budget_exceeded` field `budgetUsd`: the sub-limit is more than the least room on the
 *   parent's path — the tree's, the parent's own sub-limit and each sub-limited ancestor's
 *   (limit − spent − reserved, micro-dollars; server/budget-path.ts) — naming that budget.
 * `budgetUsd` is the child's own sub-limit, checked against that room and stored
 * as its budgetMicros; without it the child's budgetMicros is 0 (= no limit of its own). Each model
 * call of the child (and of its descendants) reserves against that sub-limit as well as the
 * tree's budget (store/job-budgets.ts). The child's selector
 * is the agent's runner labels plus `labels`. On success: 201 Job, a `status` event (queued)
 * on the child and a `child.started` event on the parent. If the parent ended meanwhile, the
 * child is cancelled at once and 409 `parent_ended` is returned.
 */
export async function createChildJob(c: Context, ctx: ServerContext, parent: JobRow, req: CreateJobRequest, agent: AgentDefinition): Promise<Response> {
  if (req.resumeJobId !== undefined) return apiError(c, 422, 'invalid_request', 'a child job cannot resume another job\'s session', 'resumeJobId');
  const limits = ctx.treeLimits ?? (envLimits ??= treeLimitsFromEnv(process.env));
  const now = ctx.now();
  let budgetMicros = 0;
  if (req.budgetUsd !== undefined) {
    const want = usdToMicros(req.budgetUsd);
    // Against the least room on the parent's path: the tree's, and the parent's own sub-limit
    // and its ancestors' (a child's calls reserve against all of them).
    const left = await leastRoomOnPath(ctx.store, parent, now);
    if (want > left.micros) {
      const whose = left.boundedBy === 'tree' ? `job tree ${parent.rootId}` : `job ${left.boundedBy}'s budget (a sub-limit in job tree ${parent.rootId})`;
      return apiError(c, 422, 'budget_exceeded', `budgetUsd ${formatMicros(want)} is more than ${whose} has left (${formatMicros(left.micros)})`, 'budgetUsd');
    }
    budgetMicros = want;
  }
  let child: JobRow;
  try {
    child = await ctx.store.createJob({
      parentId: parent.id,
      agent: agent.name,
      agentVersion: agent.version,
      input: req.input,
      selector: mergeSelector(agent.runnerLabels, req.labels),
      priority: req.priority,
      budgetMicros,
      retries: agent.retries,
      ...(req.effort ? { effortTier: req.effort } : {}),
      treeLimits: limits,
      now,
    });
  } catch (err) {
    if (err instanceof TreeLimitError) return apiError(c, 422, 'tree_limit', `job ${parent.id} may not start a child: ${err.message}`);
    throw err;
  }
  await recordStatus(ctx.store, ctx.bus, child.id, 'queued', `child of job ${parent.id} (${parent.agent}); waiting for a runner`, now);
  const label = childLabel(req.input);
  const ev = await ctx.store.appendServerEvent(parent.id, { type: 'child.started', data: { jobId: child.id, agent: agent.name, ...(label ? { label } : {}) } }, now);
  ctx.bus.publish(parent.id, [ev]);
  const fresh = await ctx.store.getJob(parent.id);
  if (!fresh || !ACTIVE_STATUSES.includes(fresh.status)) {
    const gone = await ctx.store.transitionJob(child.id, null, ['queued'], 'cancelled', ctx.now(), { endReason: 'cancelled' });
    if (gone) await recordStatus(ctx.store, ctx.bus, child.id, 'cancelled', `its parent job ${parent.id} ended (${fresh?.status ?? 'gone'})`, ctx.now());
    return apiError(c, 409, 'parent_ended', `job ${parent.id} ended (${fresh?.status ?? 'gone'}) while its child ${child.id} was created; the child was cancelled`);
  }
  ctx.log.info('child job created', { jobId: child.id, parentId: parent.id, rootId: parent.rootId, agent: child.agent });
  ctx.dispatcher.kick();
  return c.json(jobView(child), 201);
}
