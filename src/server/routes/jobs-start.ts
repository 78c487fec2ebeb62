import type { Hono } from 'hono';
import { StartJobRequest } from '../../protocol/index.js';
import { requireAdmin, type AppEnv } from '../auth.js';
import type { ServerContext } from '../context.js';
import { apiError, idError, parseId, readBody } from '../http-util.js';
import { jobView } from '../views.js';

/**
 * `POST /api/jobs/{id}/start` (admin; body {@link StartJobRequest}, `{}` allowed) → 200 Job
 * (status `assigned`): places a queued job now instead of waiting for its turn. Refusals:
 * 404 `not_found`, 409 `not_queued`, 409 `no_runner` (no matching runner connected),
 * 409 `not_connected` (the runner asked for is connected to another server replica, as
 * `POST /api/runners/{id}/update` says it),
 * 409 `on_hold` / `over_capacity` (placing it would use a held runner or go past capacity:
 * the message names the runners and their slots like `box 2/2`; repeat with `force: true`).
 * An id (path, or body `runnerId`) outside 1..2147483647 → 400 `invalid_request` naming it.
 */
export function mountStartJob(app: Hono<AppEnv>, ctx: ServerContext): void {
  app.post('/api/jobs/:id{[0-9]+}/start', requireAdmin(), async (c) => {
    const id = parseId(c.req.param('id'));
    if (id === null) return idError(c, 'id', 'a job id');
    const body = await readBody(c, StartJobRequest);
    if (!body.ok) return body.response;
    const res = await ctx.dispatcher.placeNow(id, { force: body.value.force, ...(body.value.runnerId !== undefined ? { runnerId: body.value.runnerId } : {}) });
    if (!res.ok) return apiError(c, res.code === 'not_found' ? 404 : 409, res.code, res.message, res.code === 'not_found' ? 'id' : undefined);
    const job = await ctx.store.getJob(id);
    return c.json(jobView(job ?? res.job));
  });
}
