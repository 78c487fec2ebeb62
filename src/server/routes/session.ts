import { readEmptyBody } from './empty-body.js';
import type { Hono } from 'hono';
import { SignInRequest, type SessionInfo } from '../../protocol/index.js';
import { hashToken } from '../../core/tokens.js';
import type { AppEnv } from '../auth.js';
import type { ServerContext } from '../context.js';
import { apiError, clientAddress, readBody } from '../http-util.js';
import { dummyPasswordHash, verifyPassword } from '../passwords.js';
import { SESSION_TTL_MS, sessionCookie, sessionFromCookieHeader, startSession } from '../sessions.js';
import { ADDRESS_POLICY, USER_POLICY, retryAfterSeconds, userKey, type SignInThrottle } from '../sign-in-throttle.js';
import { iso } from '../views.js';

function isHttps(url: string, forwardedProto: string | undefined): boolean {
  return url.startsWith('https:') || forwardedProto === 'https';
}

/**
 * Sign-in for the dashboard (issue 8):
 * - `POST /api/session` {@link SignInRequest} (public, needs the CSRF header) → 200
 *   {@link SessionInfo} and a `flotilla_session` cookie (HttpOnly, SameSite=Strict, 12 h);
 *   a wrong name or password → 401 `bad_credentials` (the same reply and the same scrypt cost
 *   for both, so names cannot be probed). Failed sign-ins are throttled per submitted name and
 *   per client address (sign-in-throttle.ts): past the limit → 429 `too_many_attempts` with
 *   `Retry-After` (seconds), for known and unknown names alike; a success clears the name's count.
 * - `GET /api/session` → who is calling ({@link SessionInfo}; `expiresAt` null for API tokens).
 * - `POST /api/session/logout` → 204, the session deleted and the cookie cleared.
 */
export function mountSession(app: Hono<AppEnv>, ctx: ServerContext, throttle: SignInThrottle): void {
  app.post('/api/session', async (c) => {
    const body = await readBody(c, SignInRequest);
    if (!body.ok) return body.response;
    const keys: Array<[string, typeof USER_POLICY]> = [
      [userKey(body.value.name), USER_POLICY],
      [`addr:${clientAddress(c)}`, ADDRESS_POLICY],
    ];
    // Checked before the password, so a locked name or address costs no scrypt.
    const wait = throttle.retryAfterMs(keys.map(([k]) => k), ctx.now());
    if (wait > 0) {
      c.header('retry-after', String(retryAfterSeconds(wait)));
      return apiError(c, 429, 'too_many_attempts', `too many failed sign-ins: try again in ${retryAfterSeconds(wait)} s`);
    }
    const found = await ctx.store.findUserCredentials(body.value.name);
    const stored = found?.passwordHash ?? (await dummyPasswordHash());
    const ok = (await verifyPassword(body.value.password, stored)) && !!found && found.passwordHash !== null && !found.user.disabled;
    if (!ok || !found) {
      throttle.fail(keys, ctx.now());
      ctx.log.info('sign-in refused', { name: body.value.name });
      return apiError(c, 401, 'bad_credentials', 'wrong user name or password');
    }
    throttle.reset(keys[0]![0]);
    const now = ctx.now();
    const session = await startSession(ctx.store, found.user.id, now);
    c.header('set-cookie', sessionCookie(session.value, SESSION_TTL_MS / 1000, isHttps(c.req.url, c.req.header('x-forwarded-proto'))));
    c.header('cache-control', 'no-store');
    ctx.log.info('signed in', { user: found.user.name, role: found.user.role });
    const info: SessionInfo = {
      principal: { kind: 'user', id: found.user.id, name: found.user.name, role: found.user.role },
      expiresAt: iso(session.expiresAt),
    };
    return c.json(info);
  });

  app.get('/api/session', async (c) => {
    let expiresAt: string | null = null;
    if (c.var.principal.kind === 'user') {
      const cookie = sessionFromCookieHeader(c.req.header('cookie'));
      const s = cookie ? await ctx.store.findSession(hashToken(cookie), ctx.now()) : null;
      expiresAt = s ? iso(s.expiresAt) : null;
    }
    const info: SessionInfo = { principal: c.var.principal, expiresAt };
    return c.json(info);
  });

  app.post('/api/session/logout', async (c) => {
    const body = await readEmptyBody(c);
    if (!body.ok) return body.response;
    const cookie = sessionFromCookieHeader(c.req.header('cookie'));
    if (cookie) await ctx.store.deleteSession(hashToken(cookie));
    c.header('set-cookie', sessionCookie('', 0, isHttps(c.req.url, c.req.header('x-forwarded-proto'))));
    return c.body(null, 204);
  });
}
