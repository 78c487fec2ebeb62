import type { Hono } from 'hono';
import { CreateJobRequest } from '../../protocol/index.js';
import { mergeSelector } from '../../core/labels.js';
import { usdToMicros } from '../../core/money.js';
import type { AppEnv } from '../auth.js';
import type { ServerContext } from '../context.js';
import { apiError, readBody } from '../http-util.js';
import { recordStatus } from '../status-events.js';
import { jobView } from '../views.js';

/**
 * `POST /api/jobs` (body {@link CreateJobRequest}) → 201 Job. Everything is checked before
 * anything is stored: non-JSON 400 `invalid_json`, bad body 400 `invalid_request`, unknown
 * agent 404 `unknown_agent`, input failing the agent's inputSchema 422 `invalid_input`
 * (`input.repo: must be string`). Budget defaults to the agent's limits.defaultBudgetUsd.
 */
export function mountCreateJob(app: Hono<AppEnv>, ctx: ServerContext): void {
  app.post('/api/jobs', async (c) => {
    const body = await readBody(c, CreateJobRequest);
    if (!body.ok) return body.response;
    const req = body.value;
    const agent = ctx.agents.get(req.agent);
    if (!agent) return apiError(c, 404, 'unknown_agent', `unknown agent ${JSON.stringify(req.agent)}`, 'agent');
    const problems = ctx.agents.validateInput(req.agent, req.input);
    if (problems.length) {
      return apiError(c, 422, 'invalid_input', problems.map((p) => `${p.field}: ${p.message}`).join('; '), problems[0]!.field);
    }
    const now = ctx.now();
    const job = await ctx.store.createJob({
      parentId: null,
      agent: agent.name,
      agentVersion: agent.version,
      input: req.input,
      selector: mergeSelector(agent.runnerLabels, req.labels),
      priority: req.priority,
      budgetMicros: usdToMicros(req.budgetUsd ?? agent.limits.defaultBudgetUsd),
      now,
    });
    ctx.log.info('job created', { jobId: job.id, agent: job.agent });
    await recordStatus(ctx.store, ctx.bus, job.id, 'queued', 'waiting for a runner', now);
    ctx.dispatcher.kick();
    return c.json(jobView(job), 201);
  });
}
