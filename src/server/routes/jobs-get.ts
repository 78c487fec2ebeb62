import type { Hono } from 'hono';
import type { AppEnv } from '../auth.js';
import type { ServerContext } from '../context.js';
import { apiError, parsePositiveInt } from '../http-util.js';
import { jobView } from '../views.js';

/** `GET /api/jobs/:id` → Job with `usage` (the gateway ledger's sums); 404 `not_found`. */
export function mountGetJob(app: Hono<AppEnv>, ctx: ServerContext): void {
  app.get('/api/jobs/:id', async (c) => {
    const id = parsePositiveInt(c.req.param('id'));
    if (id === null) return apiError(c, 400, 'invalid_request', 'id: must be a positive integer', 'id');
    const row = await ctx.store.getJob(id);
    if (!row) return apiError(c, 404, 'not_found', `no job ${id}`);
    return c.json(jobView(row, await ctx.store.jobUsage(id)));
  });
}
