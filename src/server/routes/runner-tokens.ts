import { readEmptyBody } from './empty-body.js';
import type { Hono } from 'hono';
import { CreateRunnerTokenRequest, type RunnerTokenInfo, type RunnerTokenList } from '../../protocol/index.js';
import { hashToken, newToken } from '../../core/tokens.js';
import { requireAdmin, type AppEnv } from '../auth.js';
import type { ServerContext } from '../context.js';
import { apiError, idError, parseId, readBody } from '../http-util.js';
import { takesQuery } from '../query-rule.js';
import type { RegistrationTokenRow } from '../../store/types.js';
import { iso, isoOrNull } from '../views.js';

/** A registration token as the API shows it (never the token or its hash); `status` on the server clock at `now`. */
export function runnerTokenView(t: RegistrationTokenRow, now: number): RunnerTokenInfo {
  const status = t.revokedAt !== null ? 'revoked' : t.usedAt !== null ? 'used' : t.expiresAt <= now ? 'expired' : 'live';
  return { id: t.id, labels: t.labels, status, createdAt: iso(t.createdAt), expiresAt: iso(t.expiresAt), usedAt: isoOrNull(t.usedAt), revokedAt: isoOrNull(t.revokedAt) };
}

/**
 * `POST /api/runner-tokens` (admin; body {@link CreateRunnerTokenRequest}) → 201
 * `{ id, token: "flr_...", expiresAt: ISO, labels }`: a single-use registration token for a new
 * runner (`id` names it in the list and for revoking; the token is shown only here; `labels` the
 * binding labels the runner gets).
 */
export function mountCreateRunnerToken(app: Hono<AppEnv>, ctx: ServerContext): void {
  app.post('/api/runner-tokens', requireAdmin(), async (c) => {
    const body = await readBody(c, CreateRunnerTokenRequest);
    if (!body.ok) return body.response;
    const now = ctx.now();
    const ttlMs = body.value.expiresInSeconds * 1000;
    const token = newToken('flr');
    const row = await ctx.store.createRegistrationToken({ tokenHash: hashToken(token), labels: body.value.labels, expiresAt: now + ttlMs, now });
    // its binding labels too, as the list shows them (`--json` left them out: a fresh tester)
    return c.json({ id: row.id, token, expiresAt: iso(row.expiresAt), labels: row.labels }, 201);
  });
}

/**
 * Registration tokens an admin lists and revokes (a leaked token need not stay valid until it
 * expires):
 * - `GET /api/runner-tokens[?all=true]` → {@link RunnerTokenList}: the live ones (unused, not
 *   revoked, not expired), or with `all=true` every one, oldest first; never a token or hash.
 *   `all` other than `true`/`false`, or another parameter → 400 `invalid_request` naming it.
 * - `POST /api/runner-tokens/{id}/revoke` → 200 {@link RunnerTokenInfo}: from now on the token
 *   is refused at registration like a used or expired one. Repeating it changes nothing; a
 *   token already used stays `used` (revoke its runner instead). Unknown id → 404 `not_found`
 *   naming it; an id outside 1..2147483647 → 400 `invalid_request` (field `id`).
 */
export function mountRunnerTokens(app: Hono<AppEnv>, ctx: ServerContext): void {
  app.get('/api/runner-tokens', requireAdmin(), takesQuery('all'), async (c) => {
    const allText = c.req.query('all');
    if (allText !== undefined && allText !== 'true' && allText !== 'false') {
      return apiError(c, 400, 'invalid_request', `all: must be true or false, got ${JSON.stringify(allText.slice(0, 40))}`, 'all');
    }
    const now = ctx.now();
    const rows = await ctx.store.listRegistrationTokens(allText === 'true' ? {} : { liveAt: now });
    const out: RunnerTokenList = { tokens: rows.map((t) => runnerTokenView(t, now)) };
    return c.json(out);
  });

  app.post('/api/runner-tokens/:id/revoke', requireAdmin(), async (c) => {
    const id = parseId(c.req.param('id'));
    if (id === null) return idError(c, 'id', 'a runner registration token id');
    const body = await readEmptyBody(c);
    if (!body.ok) return body.response;
    const now = ctx.now();
    const row = await ctx.store.revokeRegistrationToken(id, now);
    if (!row) return apiError(c, 404, 'not_found', `no runner registration token ${id}`, 'id');
    if (row.revokedAt === now) ctx.log.warn('runner registration token revoked', { id, by: c.var.principal.name });
    return c.json(runnerTokenView(row, now));
  });
}
