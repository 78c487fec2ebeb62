import { readFile, writeFile, chmod } from 'node:fs/promises';
import { makeDir } from '../core/make-dir.js';
import { join } from 'node:path';
import type { MiddlewareHandler } from 'hono';
import type { Labels, Principal } from '../protocol/index.js';
import type { ApiTokenRow, JobRow, Store } from '../store/types.js';
import { hashToken, newToken } from '../core/tokens.js';
import { apiError } from './http-util.js';
import { CSRF_HEADER, sessionFromCookieHeader } from './sessions.js';
import type { ApiTokenCache } from './api-token-cache.js';

/**
 * Hono environment of the API app: who is calling is in `c.var.principal` (an API token or a
 * signed-in user); `c.var.apiToken` is set too when the caller used an API token.
 */
export type AppEnv = { Variables: { apiToken: ApiTokenRow; principal: Principal; jobCaller?: JobRow } };

/** Routes under /api/ that authenticate otherwise (registration token, runner credential, sign-in). */
const PUBLIC_API_PATHS = new Set(['/api/runners/register', '/api/runners/connect', '/api/session']);

/** State-changing routes a member may call: only signing out. Every other non-GET needs an admin (members read, admins change: issue 8). */
const MEMBER_WRITE_PATHS = new Set(['/api/session/logout']);

/** Methods that change nothing. */
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * Routes that create or change credentials and secrets (API tokens, users and passwords, runner
 * registration tokens, webhook receivers' secrets): a change there asks the store for the
 * caller's token every time, never the 1-s cache (api-token-cache.ts), so a token revoked through
 * another replica cannot mint a lasting credential in that second.
 */
const CREDENTIAL_PATHS = /^\/api\/(tokens|users|runner-tokens|receivers)(\/|$)/;

/** Name of the file in the data folder that holds the first admin token (mode 0600). */
export const ADMIN_TOKEN_FILE = 'admin-token';

/**
 * Creates an API token (`fla_...`) with the given role; only its SHA-256 hash is stored.
 * @returns the plain token (shown once).
 */
export async function createApiToken(store: Store, name: string, role: 'admin' | 'member', now: number): Promise<string> {
  const token = newToken('fla');
  await store.createApiToken({ name, role, tokenHash: hashToken(token), now });
  return token;
}

/**
 * First start: when the store has no API tokens, creates an admin token, writes it to
 * `<dataDir>/admin-token` (mode 0600, folder created if needed) and returns it. Later starts:
 * returns the token in that file when present and still valid (so local tools keep working),
 * else null.
 * @throws when the data folder or file cannot be written on first start.
 */
export async function ensureAdminToken(store: Store, dataDir: string, now: number = Date.now()): Promise<string | null> {
  const file = join(dataDir, ADMIN_TOKEN_FILE);
  if ((await store.countApiTokens()) === 0) {
    const token = await createApiToken(store, 'admin', 'admin', now);
    await makeDir(dataDir, 0o700);
    await writeFile(file, token + '\n', { mode: 0o600 });
    await chmod(file, 0o600);
    return token;
  }
  let text: string;
  try {
    text = (await readFile(file, 'utf8')).trim();
  } catch {
    return null;
  }
  if (!text) return null;
  return (await store.findApiTokenByHash(hashToken(text))) ? text : null;
}

/**
 * Creates a single-use runner registration token (`flr_...`) carrying `labels`, valid for
 * `ttlMs` milliseconds from `now` (epoch ms). Only its hash is stored.
 * @returns the plain token.
 * @throws RangeError when ttlMs is not a positive number.
 */
export async function createRegistrationToken(store: Store, labels: Labels, ttlMs: number, now: number): Promise<string> {
  return (await registrationToken(store, labels, ttlMs, now)).token;
}

/**
 * {@link createRegistrationToken}, also giving the stored token's `id` (to revoke it once it is
 * no longer needed: `flotilla up`'s own runner, which often registers with its stored
 * credential instead).
 * @throws RangeError when ttlMs is not a positive number.
 */
export async function registrationToken(store: Store, labels: Labels, ttlMs: number, now: number): Promise<{ token: string; id: number }> {
  if (!Number.isFinite(ttlMs) || ttlMs <= 0) throw new RangeError(`ttlMs must be a positive number of milliseconds, got ${ttlMs}`);
  const token = newToken('flr');
  const row = await store.createRegistrationToken({ tokenHash: hashToken(token), labels, expiresAt: now + ttlMs, now });
  return { token, id: row.id };
}

/** The bearer token of an `Authorization: Bearer <token>` header, or null. */
export function bearerToken(header: string | undefined | null): string | null {
  if (!header) return null;
  const m = /^Bearer\s+(\S+)\s*$/i.exec(header);
  return m ? m[1]! : null;
}

/**
 * Middleware for /api/*: every route except registration and the runner socket needs a valid
 * API token as `Authorization: Bearer`; otherwise 401 `unauthorized`. Sets `c.var.apiToken`.
 * A request already authenticated by a job token (`c.var.jobCaller`, server/job-auth.ts) passes.
 * `tokens` finds API tokens by hash (default: the store each time; the app passes its
 * {@link ApiTokenCache}, api-token-cache.ts).
 */
export function requireApiToken(store: Store, now: () => number = Date.now, tokens: Pick<ApiTokenCache, 'find'> = { find: (h) => store.findApiTokenByHash(h) }): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    // A running job authenticated by its job token (job-auth.ts, issue 6).
    if (c.get('jobCaller')) return next();
    if (PUBLIC_API_PATHS.has(c.req.path) && !(c.req.path === '/api/session' && c.req.method !== 'POST')) {
      // Sign-in is public but still CSRF-checked (no login CSRF).
      if (c.req.path === '/api/session' && !csrfOk(c.req.header(CSRF_HEADER), c.req.header('sec-fetch-site'))) {
        return apiError(c, 403, 'csrf', `sign-in needs the ${CSRF_HEADER} header from the same site`);
      }
      return next();
    }
    const token = bearerToken(c.req.header('authorization'));
    if (token) {
      const hash = hashToken(token);
      const fresh = !SAFE_METHODS.has(c.req.method) && CREDENTIAL_PATHS.test(c.req.path);
      const row = fresh ? await store.findApiTokenByHash(hash) : await tokens.find(hash);
      if (!row) return apiError(c, 401, 'unauthorized', 'unknown API token');
      c.set('apiToken', row);
      c.set('principal', { kind: 'token', id: row.id, name: row.name, role: row.role });
    } else {
      const cookie = sessionFromCookieHeader(c.req.header('cookie'));
      if (!cookie) return apiError(c, 401, 'unauthorized', 'missing API token: send Authorization: Bearer <token>, or sign in');
      const session = await store.findSession(hashToken(cookie), now());
      if (!session) return apiError(c, 401, 'unauthorized', 'the session has ended: sign in again (or send an API token)');
      if (!SAFE_METHODS.has(c.req.method) && !csrfOk(c.req.header(CSRF_HEADER), c.req.header('sec-fetch-site'))) {
        return apiError(c, 403, 'csrf', `a signed-in browser must send the ${CSRF_HEADER} header from the same site to change anything`);
      }
      c.set('principal', { kind: 'user', id: session.user.id, name: session.user.name, role: session.user.role });
    }
    if (!SAFE_METHODS.has(c.req.method) && !MEMBER_WRITE_PATHS.has(c.req.path) && c.var.principal.role !== 'admin') {
      return apiError(c, 403, 'forbidden', `${c.req.method} ${c.req.path} changes things: it needs an admin (members may only read)`);
    }
    return next();
  };
}

/** CSRF check for cookie sessions: the custom header is present and the browser does not say the request is cross-site. */
function csrfOk(header: string | undefined, fetchSite: string | undefined): boolean {
  if (!header) return false;
  return fetchSite === undefined || fetchSite === 'same-origin' || fetchSite === 'none';
}

/** Middleware: only admins (API token or signed-in user) pass; others get 403 `forbidden`. Use after {@link requireApiToken}. */
export function requireAdmin(): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    if (c.var.principal?.role !== 'admin') return apiError(c, 403, 'forbidden', 'this action needs an admin API token');
    return next();
  };
}
