import type { Hono } from 'hono';
import { HOLD_DURATIONS_MS, HoldRunnerRequest } from '../../protocol/index.js';
import { requireAdmin, type AppEnv } from '../auth.js';
import type { ServerContext } from '../context.js';
import { apiError, idError, parseId, readBody } from '../http-util.js';
import { runnerView } from '../views.js';
import { heldSlotsOf } from '../runner-held.js';
import { noteRunner } from '../runner-history.js';
import { readEmptyBody } from './empty-body.js';

/**
 * `POST /api/runners/{id}/hold` (admin; body {@link HoldRunnerRequest}) → 200 Runner with
 * status `on_hold`: the dispatcher gives it no queued job until `now + for` (server clock);
 * jobs already running go on; `jobs start --force` can still place one there. `extend: true`
 * adds `for` to the end of the active hold (409 `not_held` without one), keeping its reason
 * unless `reason` is given (a new hold without `reason` → 400 `invalid_request`, field `reason`;
 * a reason is one line). A hold ending more than {@link MAX_HOLD_MS} from now → 409
 * `hold_too_long`; a revoked runner → 409 `revoked`.
 * `POST /api/runners/{id}/resume` (admin; no body, or `{}`: anything else → 400, empty-body.ts)
 * → 200 Runner: ends the hold now (no error when none; the runner's `hold` was null before
 * then, which the CLI reports as "was not on hold").
 * Unknown runner → 404 `not_found`; an id outside 1..2147483647 → 400 `invalid_request` (field `id`).
 */
/** The latest a hold may end, from now, ms (7 days): `--extend` cannot pile holds up without end. */
export const MAX_HOLD_MS = 7 * 24 * 3600 * 1000;

export function mountRunnerHolds(app: Hono<AppEnv>, ctx: ServerContext): void {
  app.post('/api/runners/:id{[0-9]+}/hold', requireAdmin(), async (c) => {
    const id = parseId(c.req.param('id'));
    if (id === null) return idError(c, 'id', 'a runner id');
    const body = await readBody(c, HoldRunnerRequest);
    if (!body.ok) return body.response;
    const row = await ctx.store.getRunner(id);
    if (!row) return apiError(c, 404, 'not_found', `no runner ${c.req.param('id')}`, 'id');
    if (row.revokedAt !== null) return apiError(c, 409, 'revoked', `runner ${row.name} was revoked: it can never take a job, so there is nothing to hold`, 'id');
    const now = ctx.now();
    const len = HOLD_DURATIONS_MS[body.value.for];
    const active = row.hold && row.hold.until > now ? row.hold : null;
    if (body.value.extend && !active) return apiError(c, 409, 'not_held', `runner ${row.name} is not on hold: nothing to extend`, 'extend');
    const until = body.value.extend && active ? active.until + len : now + len;
    if (until - now > MAX_HOLD_MS) {
      return apiError(c, 409, 'hold_too_long', `runner ${row.name}'s hold would end ${new Date(until).toISOString()}, more than 7 days from now: resume it, or revoke a runner that is gone for good`, 'for');
    }
    // The schema lets only `extend` leave the reason out: the active hold's is kept then.
    const reason = body.value.reason ?? active?.reason ?? '';
    const updated = await ctx.store.setRunnerHold(row.id, { until, reason, kind: 'manual' });
    if (!updated) return apiError(c, 404, 'not_found', `no runner ${row.id}`, 'id');
    ctx.log.info('runner held', { runnerId: row.id, until, extend: body.value.extend });
    await noteRunner(ctx, row.id, body.value.extend ? 'extended' : 'held', `${body.value.extend ? 'hold extended' : 'held'} by ${c.var.principal.name} for ${body.value.for}, until ${new Date(until).toISOString()}: ${reason}`);
    const jobs = await ctx.store.listActiveJobsForRunner(row.id);
    return c.json(runnerView(updated, jobs.map((j) => j.id), now, ctx.heartbeatTimeoutMs, await heldSlotsOf(ctx.store, updated.id), ctx.hub.isUpdating(updated.id)));
  });

  app.post('/api/runners/:id{[0-9]+}/resume', requireAdmin(), async (c) => {
    const id = parseId(c.req.param('id'));
    if (id === null) return idError(c, 'id', 'a runner id');
    const body = await readEmptyBody(c);
    if (!body.ok) return body.response;
    const before = await ctx.store.getRunner(id);
    const updated = await ctx.store.setRunnerHold(id, null);
    if (!updated) return apiError(c, 404, 'not_found', `no runner ${c.req.param('id')}`, 'id');
    ctx.log.info('runner resumed', { runnerId: updated.id });
    // History only when a hold was really ended (resuming a runner that is not held changes nothing).
    if (before?.hold && before.hold.until > ctx.now()) await noteRunner(ctx, updated.id, 'resumed', `resumed by ${c.var.principal.name} (hold was until ${new Date(before.hold.until).toISOString()})`);
    ctx.dispatcher.kick();
    const jobs = await ctx.store.listActiveJobsForRunner(updated.id);
    return c.json(runnerView(updated, jobs.map((j) => j.id), ctx.now(), ctx.heartbeatTimeoutMs, await heldSlotsOf(ctx.store, updated.id), ctx.hub.isUpdating(updated.id)));
  });
}
