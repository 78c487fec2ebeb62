import type { Hono } from 'hono';
import type { RunnerDetail } from '../../protocol/index.js';
import type { AppEnv } from '../auth.js';
import type { ServerContext } from '../context.js';
import { apiError, idError, parseId } from '../http-util.js';
import { iso, isoOrNull, runnerView } from '../views.js';
import { heldSlotsOf } from '../runner-held.js';

/**
 * `GET /api/runners/{id}` → {@link RunnerDetail}: the runner (as in the list, with the slots idle tasks keep) and its 20 most
 * recent jobs, one per attempt that ran on it (store listRecentAttemptsForRunner: a job lost
 * there and retried elsewhere too, as `lost`), newest first. Unknown id → 404 `not_found`; an
 * id outside 1..2147483647 → 400 `invalid_request` (field `id`).
 */
export function mountGetRunner(app: Hono<AppEnv>, ctx: ServerContext): void {
  app.get('/api/runners/:id{[0-9]+}', async (c) => {
    const id = parseId(c.req.param('id'));
    if (id === null) return idError(c, 'id', 'a runner id');
    const row = await ctx.store.getRunner(id);
    if (!row) return apiError(c, 404, 'not_found', `no runner ${c.req.param('id')}`, 'id');
    const now = ctx.now();
    const [recent, active, kept] = await Promise.all([ctx.store.listRecentAttemptsForRunner(row.id, 20), ctx.store.listActiveJobsForRunner(row.id), ctx.store.listTaskSlots(now)]);
    const running = active.map((j) => j.id);
    const mine = kept.filter((k) => k.runnerId === row.id);
    const body: RunnerDetail = {
      runner: runnerView(row, running, now, ctx.heartbeatTimeoutMs, await heldSlotsOf(ctx.store, row.id), ctx.hub.isUpdating(row.id), mine),
      recentJobs: recent.map((a) => ({
        id: a.job.id,
        agent: a.job.agent,
        status: a.job.status,
        attempt: a.attempt,
        outcome: a.outcome,
        current: a.current,
        createdAt: iso(a.job.createdAt),
        assignedAt: isoOrNull(a.assignedAt),
        endedAt: isoOrNull(a.endedAt),
        finishedAt: isoOrNull(a.job.finishedAt),
      })),
    };
    return c.json(body);
  });
}
