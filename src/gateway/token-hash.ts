import { hashToken } from '../core/tokens.js';

/** Most job tokens whose hashes are kept (a fleet's jobs in flight; the oldest goes first). */
const MAX = 4096;
const memo = new Map<string, string>();

/**
 * {@link hashToken} (SHA-256, hex) of a job token, memoised: every model call of a job sends
 * the same token, and hashing it each time was ~4 µs of the gateway's CPU per call. Only the
 * hash is a lookup key; whether the token is still live is the store's answer each time.
 */
export function jobTokenHash(token: string): string {
  let h = memo.get(token);
  if (h === undefined) {
    h = hashToken(token);
    if (memo.size >= MAX) memo.delete(memo.keys().next().value as string);
    memo.set(token, h);
  }
  return h;
}
