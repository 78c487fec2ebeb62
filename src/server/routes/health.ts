import type { Hono } from 'hono';
import type { AppEnv } from '../auth.js';
import type { ServerContext } from '../context.js';
import { ADMIN_TOKEN_CHALLENGE, adminTokenProof, hashToken } from '../../core/tokens.js';

/**
 * `GET /healthz` (public) → 200 `{ ok: true, store: "sqlite" | "postgres", adminTokenProof? }`,
 * or 503 when the store fails. With `?adminTokenChallenge=<64 hex>` (core/tokens.ts), and while
 * this server's data-folder admin token is still valid (read now: a revoked one is proven no
 * more), `adminTokenProof` answers that challenge: the CLI checks it before sending that token
 * (cli/options.ts). Another challenge text is ignored.
 */
export function mountHealth(app: Hono<AppEnv>, ctx: ServerContext): void {
  app.get('/healthz', async (c) => {
    const challenge = c.req.query('adminTokenChallenge');
    try {
      // the store's liveness; with a challenge, whether the admin token is still a token
      const proves = challenge !== undefined && ctx.adminToken !== undefined && ADMIN_TOKEN_CHALLENGE.test(challenge);
      let valid = false;
      if (proves) valid = (await ctx.store.findApiTokenByHash(hashToken(ctx.adminToken!))) !== null;
      else await ctx.store.countApiTokens();
      return c.json({ ok: true, store: ctx.store.dialect, ...(valid ? { adminTokenProof: adminTokenProof(ctx.adminToken!, challenge!) } : {}) });
    } catch {
      return c.json({ ok: false, store: ctx.store.dialect }, 503);
    }
  });
}
