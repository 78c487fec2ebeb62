import type { Hono } from 'hono';
import type { AppEnv } from '../auth.js';
import type { ServerContext } from '../context.js';

/**
 * `GET /healthz` (public) → 200 `{ ok: true, store: "sqlite" | "postgres", adminTokenCheck? }`,
 * or 503 when the store fails. `adminTokenCheck` (core/tokens.ts): what proves this server holds
 * its data folder's admin token, which the CLI checks before sending that token (cli/options.ts).
 */
export function mountHealth(app: Hono<AppEnv>, ctx: ServerContext): void {
  app.get('/healthz', async (c) => {
    try {
      await ctx.store.countApiTokens();
      return c.json({ ok: true, store: ctx.store.dialect, ...(ctx.adminTokenCheck ? { adminTokenCheck: ctx.adminTokenCheck } : {}) });
    } catch {
      return c.json({ ok: false, store: ctx.store.dialect }, 503);
    }
  });
}
