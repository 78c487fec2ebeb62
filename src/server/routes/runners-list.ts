import type { Hono } from 'hono';
import type { AppEnv } from '../auth.js';
import type { ServerContext } from '../context.js';
import { runnerView } from '../views.js';

/** `GET /api/runners` → `{ runners: Runner[] }` with status computed on the server clock. */
export function mountListRunners(app: Hono<AppEnv>, ctx: ServerContext): void {
  app.get('/api/runners', async (c) => {
    const rows = await ctx.store.listRunners();
    const now = ctx.now();
    const runners = [];
    for (const r of rows) {
      const active = await ctx.store.listActiveJobsForRunner(r.id);
      runners.push(runnerView(r, active.map((j) => j.id), now, ctx.heartbeatTimeoutMs));
    }
    return c.json({ runners });
  });
}
