import type { Hono } from 'hono';
import { CreateApiTokenRequest, type ApiTokenInfo, type CreatedApiToken } from '../../protocol/index.js';
import { createApiToken, requireAdmin, type AppEnv } from '../auth.js';
import type { ServerContext } from '../context.js';
import { apiError, idError, parseId, readBody } from '../http-util.js';
import type { ApiTokenRow } from '../../store/types.js';
import { hashToken } from '../../core/tokens.js';
import { iso } from '../views.js';
import type { ApiTokenCache } from '../api-token-cache.js';

function tokenView(t: ApiTokenRow): ApiTokenInfo {
  return { id: t.id, name: t.name, role: t.role, createdAt: iso(t.createdAt) };
}

/**
 * API tokens (admin only, issue 8):
 * - `GET /api/tokens` → `{ tokens: ApiTokenInfo[] }` (never a token or hash);
 * - `POST /api/tokens` {@link CreateApiTokenRequest} → 201 {@link CreatedApiToken} (the
 *   `fla_...` token, shown once);
 * - `DELETE /api/tokens/:id` → 204 (revoked), 404 unknown, 409 `conflict` when it is the
 *   token of this very request (so an admin cannot lock themselves out by accident). The
 *   token stops working at once here (`tokens`, the app's api-token-cache.ts) and within 1 s
 *   on other replicas.
 */
export function mountApiTokens(app: Hono<AppEnv>, ctx: ServerContext, tokens: Pick<ApiTokenCache, 'invalidate'>): void {
  app.get('/api/tokens', requireAdmin(), async (c) => {
    return c.json({ tokens: (await ctx.store.listApiTokens()).map(tokenView) });
  });

  app.post('/api/tokens', requireAdmin(), async (c) => {
    const body = await readBody(c, CreateApiTokenRequest);
    if (!body.ok) return body.response;
    const token = await createApiToken(ctx.store, body.value.name, body.value.role, ctx.now());
    const row = await ctx.store.findApiTokenByHash(hashToken(token));
    if (!row) throw new Error('token just created is missing');
    ctx.log.info('api token created', { name: row.name, role: row.role, by: c.var.principal.name });
    const out: CreatedApiToken = { ...tokenView(row), token };
    return c.json(out, 201);
  });

  app.delete('/api/tokens/:id', requireAdmin(), async (c) => {
    const id = parseId(c.req.param('id'));
    if (id === null) return idError(c, 'id', 'an API token id');
    if (c.var.principal.kind === 'token' && c.var.principal.id === id) {
      return apiError(c, 409, 'conflict', 'id: this is the token of this request; revoke it with another admin credential', 'id');
    }
    const deleted = await ctx.store.deleteApiToken(id);
    tokens.invalidate(); // after the delete: a request checked meanwhile read the store again
    if (!deleted) return apiError(c, 404, 'not_found', `no API token ${id}: never made, or revoked already (a revoked token is deleted)`);
    ctx.log.info('api token revoked', { id, by: c.var.principal.name });
    return c.body(null, 204);
  });
}
