import type { Hono } from 'hono';
import type { JobEventPage } from '../../protocol/index.js';
import type { AppEnv } from '../auth.js';
import type { ServerContext } from '../context.js';
import { apiError, idError, parseId, parsePositiveInt } from '../http-util.js';
import { takesQuery } from '../query-rule.js';

/**
 * `GET /api/jobs/{id}/events/page?before=&limit=` → {@link JobEventPage}: up to `limit` (1–2,000,
 * default 300) of the job's events before seq `before` (default: the newest), ascending, and
 * how many older ones remain. The job page opens on the tail (one small page, so a 10,000-event
 * job's first screen costs what a short job's does), follows new events over SSE from there
 * (`/events` with `after`), and reads older pages as the reader scrolls up.
 * Bad id/before/limit → 400 `invalid_request` naming it; unknown job → 404 `not_found`.
 */
export function mountJobEventPage(app: Hono<AppEnv>, ctx: ServerContext): void {
  app.get('/api/jobs/:id/events/page', takesQuery('before', 'limit'), async (c) => {
    const id = parseId(c.req.param('id'));
    if (id === null) return idError(c, 'id', 'a job id');
    const beforeText = c.req.query('before');
    const before = beforeText === undefined ? null : parseId(beforeText);
    if (before === null && beforeText !== undefined) return idError(c, 'before', 'an event seq');
    const limitText = c.req.query('limit');
    const limit = limitText === undefined ? 300 : parsePositiveInt(limitText);
    if (limit === null || limit > 2_000) return apiError(c, 400, 'invalid_request', 'limit: must be an integer from 1 to 2000', 'limit');
    if (!(await ctx.store.getJob(id))) return apiError(c, 404, 'not_found', `no job ${id}`);
    const events = await ctx.store.listEventsBefore(id, before, limit);
    // Seqs are 1..n with no gap (store/events.ts), so the first seq says how many come before it.
    const olderCount = events.length > 0 ? events[0]!.seq - 1 : before === null ? 0 : Math.max(0, before - 1);
    const body: JobEventPage = { events, olderCount };
    return c.json(body);
  });
}
