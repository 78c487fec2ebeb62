import type { Hono } from 'hono';
import type { RunnerActivity } from '../../protocol/index.js';
import type { AppEnv } from '../auth.js';
import type { ServerContext } from '../context.js';
import { apiError, idError, parseId, parsePositiveInt } from '../http-util.js';
import { takesQuery } from '../query-rule.js';
import { runnerActivityOf } from '../runner-activity.js';

/**
 * `GET /api/runners/{id}/activity?limit=` → {@link RunnerActivity}: the runner's history,
 * newest first, at most `limit` lines (1–200, default 50): status and hold changes recorded as
 * they happened, and the starts and ends of the recent job attempts that ran on it, also those
 * lost there and retried elsewhere (server/runner-activity.ts).
 * Unknown id → 404 `not_found`; an id outside 1..2147483647 or a bad limit → 400
 * `invalid_request` naming it.
 */
export function mountRunnerActivity(app: Hono<AppEnv>, ctx: ServerContext): void {
  app.get('/api/runners/:id{[0-9]+}/activity', takesQuery('limit'), async (c) => {
    const limitText = c.req.query('limit');
    const limit = limitText === undefined ? 50 : parsePositiveInt(limitText);
    if (limit === null || limit > 200) return apiError(c, 400, 'invalid_request', 'limit: must be an integer from 1 to 200', 'limit');
    const id = parseId(c.req.param('id'));
    if (id === null) return idError(c, 'id', 'a runner id');
    const runner = await ctx.store.getRunner(id);
    if (!runner) return apiError(c, 404, 'not_found', `no runner ${c.req.param('id')}`, 'id');
    // Each attempt gives up to two lines: half the limit in attempts (the store caps it at 100).
    const [events, attempts] = await Promise.all([ctx.store.listRunnerEvents(runner.id, limit), ctx.store.listRecentAttemptsForRunner(runner.id, Math.min(100, Math.ceil(limit / 2)))]);
    const body: RunnerActivity = { entries: runnerActivityOf(runner, events, attempts, limit) };
    return c.json(body);
  });
}
