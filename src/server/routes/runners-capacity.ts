import type { Hono } from 'hono';
import { SetRunnerCapacityRequest } from '../../protocol/index.js';
import { CapacityError } from '../../store/runner-capacity.js';
import { requireAdmin, type AppEnv } from '../auth.js';
import type { ServerContext } from '../context.js';
import { apiError, idError, parseId, readBody } from '../http-util.js';
import { runnerView } from '../views.js';
import { heldSlotsOf } from '../runner-held.js';
import { noteRunner } from '../runner-history.js';

/**
 * `PATCH /api/runners/{id}` (admin; body {@link SetRunnerCapacityRequest}) → 200 Runner: sets
 * the owner's capacity (parallel jobs 1–4) and/or browser slots (1–4, ≤ capacity); they win
 * over the runner's own `--capacity` / `--browser-slots` from now on (null clears the
 * setting). A runner connected to this server gets the new limits for its next assignment.
 * Rule from issue 5: "parallel jobs 1–4 (owner setting) and browser slots 1–4, never more than
 * its parallel jobs". Only `capacity` given: the owner's browser slots above the new capacity
 * are lowered to it (store/runner-capacity.ts). Bad body → 400 `invalid_request` naming the
 * field (browser slots given over capacity: field `browserSlots`, message `browserSlots (3) must
 * not exceed capacity (2)`); unknown runner → 404 `not_found`; an id outside 1..2147483647 →
 * 400 `invalid_request` (field `id`); a revoked runner → 409 `revoked`. Nothing changes on an error.
 */
export function mountRunnerCapacity(app: Hono<AppEnv>, ctx: ServerContext): void {
  app.patch('/api/runners/:id{[0-9]+}', requireAdmin(), async (c) => {
    const id = parseId(c.req.param('id'));
    if (id === null) return idError(c, 'id', 'a runner id');
    const body = await readBody(c, SetRunnerCapacityRequest);
    if (!body.ok) return body.response;
    const before = await ctx.store.getRunner(id);
    if (!before) return apiError(c, 404, 'not_found', `no runner ${id}`, 'id');
    // As hold and update: a revoked runner never takes a job again, so a limit for it means nothing.
    if (before.revokedAt !== null) return apiError(c, 409, 'revoked', `runner ${before.name} (${before.id}) was revoked: it can never take a job, so its capacity cannot be set`, 'id');
    let row;
    try {
      row = await ctx.store.setRunnerCapacity(id, body.value);
    } catch (err) {
      if (err instanceof CapacityError) {
        const field = /browserSlots/.test(err.message) ? 'browserSlots' : 'capacity';
        return apiError(c, 400, 'invalid_request', err.message.replace(/^store: /, ''), field);
      }
      throw err;
    }
    if (!row) return apiError(c, 404, 'not_found', `no runner ${id}`, 'id');
    ctx.hub.setLimits(row.id, { capacity: row.capacity, browserSlots: row.browserSlots });
    ctx.log.info('runner capacity set', { runnerId: row.id, capacity: row.capacity, browserSlots: row.browserSlots });
    await noteRunner(ctx, row.id, 'capacity', `capacity set by ${c.var.principal.name}: ${row.capacity} parallel job${row.capacity === 1 ? '' : 's'}, ${row.browserSlots} browser slot${row.browserSlots === 1 ? '' : 's'}`);
    const jobs = await ctx.store.listActiveJobsForRunner(row.id);
    return c.json(runnerView(row, jobs.map((j) => j.id), ctx.now(), ctx.heartbeatTimeoutMs, await heldSlotsOf(ctx.store, row.id), ctx.hub.isUpdating(row.id)));
  });
}
