import { createHash, randomBytes } from 'node:crypto';
import { forgetReceivers } from './receiver-cache.js';
import type { Hono } from 'hono';
import { CreateReceiverRequest, type CreatedReceiver } from '../../protocol/index.js';
import type { AppEnv } from '../auth.js';
import type { ServerContext } from '../context.js';
import { apiError, idError, parseId, readBody } from '../http-util.js';
import { taskInputProblem } from '../tasks/task-input.js';
import { receiverView } from '../tasks/views.js';
import { compileCel } from './cel-route.js';

/**
 * Receivers API (issue 7), admin for changes:
 * - `POST /api/receivers` (CreateReceiverRequest) → 201 CreatedReceiver: the secret (HMAC
 *   secret, or for `generic` + `bearer` the token; `whsec_` + 32 random bytes hex) is in this
 *   reply only. A generic receiver needs `keyExpr` (and only it takes `keyExpr`/`summaryExpr`); a CEL expression that does not parse →
 *   422 `invalid_request` (field `keyExpr`/`summaryExpr`); unknown fallback task 404; a taken
 *   name 409 `name_taken`; `policies.assign.agent` not loaded → 404 `unknown_agent`, unable to run tasks
 *   (its inputSchema refuses taskPrompt/taskId/taskTurn) → 422 `invalid_input`.
 * - `GET /api/receivers` → ReceiverList; `GET /api/receivers/:id` → Receiver;
 *   `DELETE /api/receivers/:id` → 204 (its deliveries go; its events stay).
 */
export function mountReceivers(app: Hono<AppEnv>, ctx: ServerContext): void {
  app.post('/api/receivers', async (c) => {
    const body = await readBody(c, CreateReceiverRequest);
    if (!body.ok) return body.response;
    const req = body.value;
    if (req.provider === 'generic' && !req.keyExpr) return apiError(c, 422, 'invalid_request', 'keyExpr: a generic receiver needs a CEL expression giving the resource key, e.g. payload.groupKey', 'keyExpr');
    for (const field of ['keyExpr', 'summaryExpr'] as const) {
      // Forge events are routed by built-in rules (forge-route.ts); an expression would be ignored.
      if (req.provider !== 'generic' && req[field] !== undefined) return apiError(c, 422, 'invalid_request', `${field}: only generic receivers take a CEL expression; ${req.provider} events are routed by their issue or pull request`, field);
    }
    for (const field of ['keyExpr', 'summaryExpr'] as const) {
      const expr = req[field];
      if (!expr) continue;
      try {
        compileCel(expr);
      } catch (err) {
        return apiError(c, 422, 'invalid_request', `${field}: ${(err as Error).message}`, field);
      }
    }
    // An assignment policy acts on forge issue/PR assignments; a generic sender has none (fresh-user finding: it was accepted and did nothing).
    if (req.provider === 'generic' && req.policies.assign) return apiError(c, 422, 'invalid_request', 'policies.assign: only github and gitea receivers take an assignment policy; a generic receiver routes by its keyExpr', 'policies.assign');
    const fallback = req.fallbackTaskId !== undefined ? await ctx.store.getTask(req.fallbackTaskId) : undefined;
    if (req.fallbackTaskId !== undefined && !fallback) return apiError(c, 404, 'unknown_task', `no task ${req.fallbackTaskId}`, 'fallbackTaskId');
    // a completed task takes no events: each unmatched delivery would be dropped (fresh-user finding)
    if (fallback?.status === 'completed') return apiError(c, 422, 'invalid_request', `fallbackTaskId: task ${fallback.id} is completed and takes no events; reopen it or pick another`, 'fallbackTaskId');
    if (req.policies.assign && !ctx.agents.get(req.policies.assign.agent)) return apiError(c, 404, 'unknown_agent', `unknown agent ${JSON.stringify(req.policies.assign.agent)}`, 'policies.assign.agent');
    const unfit = req.policies.assign ? taskInputProblem(ctx.agents, req.policies.assign.agent) : null;
    if (unfit) return apiError(c, 422, 'invalid_input', unfit, 'policies.assign.agent');
    const secret = `whsec_${randomBytes(32).toString('hex')}`;
    const bearer = req.provider === 'generic' && req.auth === 'bearer';
    const auth = req.provider === 'generic' ? req.auth : 'hmac';
    try {
      const r = await ctx.store.createReceiver({
        name: req.name,
        provider: req.provider,
        auth,
        keyExpr: req.keyExpr ?? null,
        summaryExpr: req.summaryExpr ?? null,
        fallbackTaskId: req.fallbackTaskId ?? null,
        policies: req.policies,
        secret: bearer ? null : secret,
        tokenHash: bearer ? createHash('sha256').update(secret).digest('hex') : null,
        now: ctx.now(),
      });
      ctx.log.info('receiver created', { receiver: r.name, provider: r.provider });
      return c.json({ receiver: receiverView(r), secret } satisfies CreatedReceiver, 201);
    } catch (err) {
      if (/is taken/.test((err as Error).message)) return apiError(c, 409, 'name_taken', `receiver name ${JSON.stringify(req.name)} is taken`, 'name');
      throw err;
    }
  });

  app.get('/api/receivers', async (c) => c.json({ receivers: (await ctx.store.listReceivers()).map(receiverView) }));

  app.get('/api/receivers/:id', async (c) => {
    const id = parseId(c.req.param('id'));
    if (id === null) return idError(c, 'id', 'a receiver id');
    const r = await ctx.store.getReceiver(id);
    return r ? c.json(receiverView(r)) : apiError(c, 404, 'not_found', `no receiver ${id}`);
  });

  app.delete('/api/receivers/:id', async (c) => {
    const id = parseId(c.req.param('id'));
    if (id === null) return idError(c, 'id', 'a receiver id');
    const deleted = await ctx.store.deleteReceiver(id);
    forgetReceivers(ctx.store);
    if (!deleted) return apiError(c, 404, 'not_found', `no receiver ${id}`);
    ctx.log.info('receiver deleted', { receiverId: id });
    return c.body(null, 204);
  });
}
