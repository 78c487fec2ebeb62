import type { Hono } from 'hono';
import { requireAdmin, type AppEnv } from '../auth.js';
import type { ServerContext } from '../context.js';
import { CLOSE_CODES } from '../hub.js';
import { apiError, idError, parseId } from '../http-util.js';
import { runnerView } from '../views.js';
import { noteRunner } from '../runner-history.js';
import { readEmptyBody } from './empty-body.js';
import { recordStatus } from '../status-events.js';

/**
 * `POST /api/runners/{id}/revoke` (admin; no body, or `{}`: anything else → 400 before anything
 * changes, empty-body.ts) → 200 Runner (status `revoked`, `revokedAt` set).
 * Its credential is refused from now on (the upgrade gets 401), its socket on this server is
 * closed (code 4403), and the job tokens of its assigned/running jobs die at once (the gateway
 * and API refuse them). The jobs themselves stay on it until its lease has surely run out: the
 * runner stops them by 0.9 × the heartbeat timeout after its last heartbeat the server got
 * (runner/lease.ts), and the liveness sweep (sweeper.ts) ends them once that heartbeat is older
 * than the timeout, as for any silent runner: each goes back to the queue when it has retries
 * left, else it is `lost` (reason `runner_lost`; one being cancelled is `cancelled`). So a retry
 * never runs beside the attempt the revoked runner is still stopping. Repeating it changes
 * nothing. Unknown runner → 404 `not_found`; an id outside 1..2147483647 → 400
 * `invalid_request` (field `id`). A job whose session can only resume on it — paused for budget
 * there, or queued to resume there — ends `lost` at once (endReason `runner_revoked`, a status
 * event naming the runner): no top-up could resume it (store revokeRunner).
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
    ctx.log.warn('runner revoked', { runnerId: res.runner.id, jobs: res.jobs.length, stranded: res.stranded.length });
    // paused (or queued) to resume a session kept there: lost now, each followed job told why
    for (const j of res.stranded) await recordStatus(ctx.store, ctx.bus, j.id, 'lost', j.error ?? 'its runner was revoked', now, res.runner.id);
    if (res.jobs.length || res.stranded.length || res.runner.revokedAt === now) {
      const n = res.jobs.length;
      const by = res.runner.lastHeartbeatAt !== null ? `; they end (retried or lost) once its lease runs out, after ${new Date(res.runner.lastHeartbeatAt + ctx.heartbeatTimeoutMs).toISOString()}` : '';
      const lost = res.stranded.length ? `; ${res.stranded.length} job${res.stranded.length === 1 ? '' : 's'} waiting to resume a session kept there lost` : '';
      await noteRunner(ctx, res.runner.id, 'revoked', `revoked by ${c.var.principal.name}; job tokens of ${n} running job${n === 1 ? '' : 's'} ended${n ? by : ''}${lost}`);
    }
    return c.json(runnerView(res.runner, [], now, ctx.heartbeatTimeoutMs));
  });
}
