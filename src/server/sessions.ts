import { randomBytes } from 'node:crypto';
import { hashToken } from '../core/tokens.js';
import type { Store } from '../store/types.js';

/** Name of the session cookie. */
export const SESSION_COOKIE = 'flotilla_session';
/** Header a cookie-authenticated state-changing request must carry (CSRF defence: a cross-site form cannot set it, and no CORS is offered). */
export const CSRF_HEADER = 'x-flotilla-csrf';
/** How long a session lasts from sign-in: 12 hours, in ms. */
export const SESSION_TTL_MS = 12 * 3600_000;

/**
 * Starts a session for `userId`: a random 256-bit value (`fls_<base64url>`) for the cookie;
 * only its SHA-256 hash is stored. `now`/expiry in epoch ms.
 */
export async function startSession(store: Store, userId: number, now: number, ttlMs = SESSION_TTL_MS): Promise<{ value: string; expiresAt: number }> {
  const value = `fls_${randomBytes(32).toString('base64url')}`;
  const expiresAt = now + ttlMs;
  await store.createSession({ tokenHash: hashToken(value), userId, expiresAt, now });
  return { value, expiresAt };
}

/**
 * `Set-Cookie` value for the session: HttpOnly, SameSite=Strict, Path=/, Max-Age in seconds
 * (0 deletes it), Secure when the request came over https.
 */
export function sessionCookie(value: string, maxAgeSeconds: number, secure: boolean): string {
  return `${SESSION_COOKIE}=${value}; Path=/; HttpOnly; SameSite=Strict; Max-Age=${Math.max(0, Math.floor(maxAgeSeconds))}${secure ? '; Secure' : ''}`;
}

/** The session cookie's value from a `Cookie` header, or null. */
export function sessionFromCookieHeader(header: string | undefined | null): string | null {
  if (!header) return null;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq < 0) continue;
    if (part.slice(0, eq).trim() === SESSION_COOKIE) {
      const v = part.slice(eq + 1).trim();
      return /^fls_[A-Za-z0-9_-]{20,100}$/.test(v) ? v : null;
    }
  }
  return null;
}
