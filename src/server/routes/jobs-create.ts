import type { Hono } from 'hono';
import { CreateJobRequest } from '../../protocol/index.js';
import { mergeSelector } from '../../core/labels.js';
import { usdToMicros } from '../../core/money.js';
import { isTerminal } from '../../core/job-state.js';
import type { AppEnv } from '../auth.js';
import type { ServerContext } from '../context.js';
import { apiError, readBody } from '../http-util.js';
import { jobEffort } from '../effort.js';
import { jobView } from '../views.js';
import { createChildJob } from '../child-jobs.js';

/**
 * `POST /api/jobs` (body {@link CreateJobRequest}) → 201 Job. Everything is checked before
 * anything is stored: non-JSON 400 `invalid_json`, bad body 400 `invalid_request` (also `role`
 * with a different `labels.role`, field `role`; ids above 2147483647), unknown
 * agent 404 `unknown_agent`, input failing the agent's inputSchema 422 `invalid_input`
 * (`input.repo: must be string`). Budget defaults to the agent's limits.defaultBudgetUsd.
 * `resumeJobId` (issue 4, sessions): the new job resumes that ended job's harness session on
 * the same runner (pinned) in the same workspace; unknown job 404 `unknown_job`, a job paused
 * for budget (a top-up resumes it), still active, without a session or runner, or whose runner
 * was revoked 409 `not_resumable`, another harness 422
 * `invalid_request` (all with field `resumeJobId`). An empty input takes that job's input.
 * Called with a job token (`flj_...`), it creates a child of that job instead (child-jobs.ts).
 */
export function mountCreateJob(app: Hono<AppEnv>, ctx: ServerContext): void {
  app.post('/api/jobs', async (c) => {
    const body = await readBody(c, CreateJobRequest);
    if (!body.ok) return body.response;
    const req = body.value;
    // An agent installed through another replica a moment ago: re-read the store once (issue 6).
    const agent = ctx.agents.get(req.agent) ?? (await ctx.agents.refresh().then(() => ctx.agents.get(req.agent)));
    if (!agent) return apiError(c, 404, 'unknown_agent', `unknown agent ${JSON.stringify(req.agent)}`, 'agent');
    try {
      jobEffort(req.effort, agent, await ctx.effort.get());
    } catch (err) {
      return apiError(c, 422, 'invalid_request', (err as Error).message, 'effort');
    }
    let resume: { sessionId: string; runnerId: number; workspaceJobId: number } | null = null;
    if (req.resumeJobId !== undefined) {
      const from = await ctx.store.getJob(req.resumeJobId);
      if (!from) return apiError(c, 404, 'unknown_job', `job ${req.resumeJobId} does not exist`, 'resumeJobId');
      // paused for budget: a top-up resumes it in its own session (it said "resume it once it has ended": tester finding)
      if (from.status === 'paused') return apiError(c, 409, 'not_resumable', `job ${from.id} is paused for budget: a top-up resumes it in its own session (flotilla budget ${from.id} --add USD); resumeJobId starts a new job from an ended one`, 'resumeJobId');
      if (!isTerminal(from.status)) return apiError(c, 409, 'not_resumable', `job ${from.id} is still ${from.status}: resume it once it has ended`, 'resumeJobId');
      if (!from.sessionId || from.runnerId === null) return apiError(c, 409, 'not_resumable', `job ${from.id} recorded no harness session to resume`, 'resumeJobId');
      // its session lives on that runner only: a revoked one never runs the new job
      const keeper = await ctx.store.getRunner(from.runnerId);
      if (!keeper || keeper.revokedAt !== null) return apiError(c, 409, 'not_resumable', `job ${from.id}'s session and workspace are kept on runner ${keeper ? `${keeper.name} (${keeper.id})` : from.runnerId}, which was revoked: it cannot be resumed; start a new run`, 'resumeJobId');
      const fromHarness = ctx.agents.get(from.agent)?.harness;
      if (fromHarness !== agent.harness) {
        return apiError(c, 422, 'invalid_request', `job ${from.id} ran harness ${fromHarness ?? '(agent no longer loaded)'}, agent ${agent.name} uses ${agent.harness}: a session resumes only in the same harness`, 'resumeJobId');
      }
      resume = { sessionId: from.sessionId, runnerId: from.runnerId, workspaceJobId: from.workspaceJobId ?? from.id };
      if (Object.keys(req.input).length === 0) req.input = from.input;
    }
    const problems = ctx.agents.validateInput(req.agent, req.input);
    if (problems.length) {
      return apiError(c, 422, 'invalid_input', problems.map((p) => `${p.field}: ${p.message}`).join('; '), problems[0]!.field);
    }
    // Called with a job token: a child of that job (issue 6, server/child-jobs.ts).
    const caller = c.get('jobCaller');
    if (caller) return createChildJob(c, ctx, caller, req, agent);
    const now = ctx.now();
    const waiting = resume ? `resuming session ${resume.sessionId} of job ${req.resumeJobId}; waiting for runner ${resume.runnerId}` : 'waiting for a runner';
    // The job and its `queued` status event in one write (one round trip on PostgreSQL), placed
    // on a runner at once (dispatcher.ts createJob: stored already assigned when a runner here
    // is free and no older job waits; else a pass whose first read runs beside the write).
    const { job } = await ctx.dispatcher.createJob(
      {
        parentId: null,
        agent: agent.name,
        agentVersion: agent.version,
        input: req.input,
        selector: mergeSelector(agent.runnerLabels, req.role !== undefined ? { ...req.labels, role: req.role } : req.labels),
        priority: req.priority,
        budgetMicros: usdToMicros(req.budgetUsd ?? agent.limits.defaultBudgetUsd),
        retries: agent.retries,
        ...(req.effort ? { effortTier: req.effort } : {}),
        ...(resume ? { resumeSessionId: resume.sessionId, pinnedRunnerId: resume.runnerId, workspaceJobId: resume.workspaceJobId } : {}),
        now,
      },
      { type: 'status', data: { status: 'queued', message: waiting } },
      agent,
    );
    ctx.log.info('job created', { jobId: job.id, agent: job.agent });
    return c.json(jobView(job), 201);
  });
}
