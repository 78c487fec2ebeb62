import type { Hono } from 'hono';
import type { AppEnv } from '../auth.js';
import type { ServerContext } from '../context.js';

/** `GET /healthz` (public) → 200 `{ ok: true, store: "sqlite" | "postgres" }`, or 503 when the store fails. */
export function mountHealth(app: Hono<AppEnv>, ctx: ServerContext): void {
  app.get('/healthz', async (c) => {
    try {
      await ctx.store.countApiTokens();
      return c.json({ ok: true, store: ctx.store.dialect });
    } catch {
      return c.json({ ok: false, store: ctx.store.dialect }, 503);
    }
  });
}
