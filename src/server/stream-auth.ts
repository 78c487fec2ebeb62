import type { Context } from 'hono';
import { hashToken } from '../core/tokens.js';
import type { Store } from '../store/types.js';
import type { AppEnv } from './auth.js';
import { bearerToken } from './auth.js';
import { sessionFromCookieHeader } from './sessions.js';

/** How often a long-lived stream checks its caller's credential again, ms. */
export const STREAM_REAUTH_MS = 2000;

/**
 * For a long-lived response (an SSE stream): a check of the credential the request was let in
 * with, to run again while the stream stays open. Resolves null while it holds, or the reason
 * it no longer does: an API token revoked (`flotilla tokens revoke`, on any replica: the store
 * is asked, not the 1 s token cache) or a browser session ended. A request let in by a job
 * token (`c.var.jobCaller`) is not re-checked here: its job's end closes the stream anyway.
 * Checks at most once per {@link STREAM_REAUTH_MS}; between checks it answers the last result.
 */
export function credentialCheck(c: Context<AppEnv>, store: Store, now: () => number): () => Promise<string | null> {
  const token = c.get('jobCaller') ? null : bearerToken(c.req.header('authorization'));
  const cookie = c.get('jobCaller') || token ? null : sessionFromCookieHeader(c.req.header('cookie'));
  const hash = token ? hashToken(token) : cookie ? hashToken(cookie) : null;
  let checkedAt = now();
  let last: string | null = null;
  return async () => {
    if (hash === null || last !== null || now() - checkedAt < STREAM_REAUTH_MS) return last;
    checkedAt = now();
    if (token) {
      if (!(await store.findApiTokenByHash(hash))) last = 'the API token was revoked';
    } else if (!(await store.findSession(hash, checkedAt))) {
      last = 'the session has ended: sign in again';
    }
    return last;
  };
}
