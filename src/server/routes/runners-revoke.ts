import type { Hono } from 'hono';
import { requireAdmin, type AppEnv } from '../auth.js';
import type { ServerContext } from '../context.js';
import { CLOSE_CODES } from '../hub.js';
import { apiError, idError, parseId } from '../http-util.js';
import { reportEndedJobs } from '../status-events.js';
import { runnerView } from '../views.js';
import { noteRunner } from '../runner-history.js';
import { readEmptyBody } from './empty-body.js';

/**
 * `POST /api/runners/{id}/revoke` (admin; no body, or `{}`: anything else → 400 before anything
 * changes, empty-body.ts) → 200 Runner (status `revoked`, `revokedAt` set).
 * Its credential is refused from now on (the upgrade gets 401), its socket on this server is
 * closed (code 4403), and its assigned/running jobs end at once: their job tokens die (the
 * gateway and API refuse them), and each is `lost` (reason `runner_revoked`) or, with retries
 * left, back in the queue. Repeating it changes nothing. Unknown runner → 404 `not_found`; an id
 * outside 1..2147483647 → 400 `invalid_request` (field `id`).
 */
export function mountRevokeRunner(app: Hono<AppEnv>, ctx: ServerContext): void {
  app.post('/api/runners/:id{[0-9]+}/revoke', requireAdmin(), async (c) => {
    const id = parseId(c.req.param('id'));
    if (id === null) return idError(c, 'id', 'a runner id');
    const body = await readEmptyBody(c);
    if (!body.ok) return body.response;
    const now = ctx.now();
    const res = await ctx.store.revokeRunner(id, now);
    if (!res) return apiError(c, 404, 'not_found', `no runner ${c.req.param('id')}`, 'id');
    ctx.hub.disconnect(res.runner.id, CLOSE_CODES.revoked, 'runner revoked');
    ctx.log.warn('runner revoked', { runnerId: res.runner.id, jobs: res.jobs.length });
    if (res.jobs.length || res.runner.revokedAt === now) await noteRunner(ctx, res.runner.id, 'revoked', `revoked by ${c.var.principal.name}; ${res.jobs.length} running job${res.jobs.length === 1 ? '' : 's'} ended`);
    await reportEndedJobs(ctx.store, ctx.bus, res.jobs, () => `runner ${res.runner.name} was revoked`, now);
    for (const j of res.jobs) ctx.bus.publish(j.id);
    if (res.jobs.length) ctx.dispatcher.kick();
    return c.json(runnerView(res.runner, [], now, ctx.heartbeatTimeoutMs));
  });
}
