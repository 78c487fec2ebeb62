import type { Hono } from 'hono';
import type { AppEnv } from '../auth.js';
import type { ServerContext } from '../context.js';
import { apiError, idError, parseId } from '../http-util.js';
import { jobView } from '../views.js';

/** Newest events read to find a queued job's latest `status` note (a queued job has few others). */
const WAIT_EVENTS = 20;

/**
 * `GET /api/jobs/:id` → Job with `usage` (the gateway ledger's sums) and, while it is queued,
 * `waiting` (why: the dispatcher's latest note, issue 5 "a job no runner could ever match says
 * so in its status"); 404 `not_found`.
 */
export function mountGetJob(app: Hono<AppEnv>, ctx: ServerContext): void {
  app.get('/api/jobs/:id', async (c) => {
    const id = parseId(c.req.param('id'));
    if (id === null) return idError(c, 'id', 'a job id');
    const row = await ctx.store.getJob(id);
    if (!row) return apiError(c, 404, 'not_found', `no job ${id}`);
    const view = jobView(row, await ctx.store.jobUsage(id));
    if (row.status === 'queued') {
      const notes = (await ctx.store.listEventsBefore(id, null, WAIT_EVENTS)).filter((e) => e.type === 'status');
      const last = notes[notes.length - 1];
      view.waiting = (last?.type === 'status' && last.data.status === 'queued' && last.data.message) || 'waiting for a runner';
    }
    return c.json(view);
  });
}
