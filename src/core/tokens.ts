import { createHash, createHmac, randomBytes } from 'node:crypto';

/**
 * Secrets Flotilla hands out. Each kind has a prefix so a leaked one is recognisable (and
 * redacted by core/log.ts): `fla_` API token, `flr_` runner registration token, `flc_` runner
 * credential, `flj_` job token (the harness's model key at the gateway). Only the SHA-256 hash
 * is ever stored.
 */
export type TokenKind = 'fla' | 'flr' | 'flc' | 'flj';

/** Random bytes drawn from the CSPRNG 32 tokens at a time (one randomBytes call per token was ~18 µs of a dispatched job, bench/dispatch). */
const POOL_TOKENS = 32;
let pool = Buffer.alloc(0);
let poolAt = 0;

/** A new random token: `<kind>_<43 chars of base64url>` (256 bits from the CSPRNG; each pool byte is used once). */
export function newToken(kind: TokenKind): string {
  if (poolAt + 32 > pool.length) {
    pool = randomBytes(32 * POOL_TOKENS);
    poolAt = 0;
  }
  const bytes = pool.subarray(poolAt, poolAt + 32);
  poolAt += 32;
  return `${kind}_${bytes.toString('base64url')}`;
}

/** SHA-256 of the token, lowercase hex (64 chars): what the store keeps and looks up. */
export function hashToken(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}

/** An `adminTokenChallenge` (`GET /healthz`): 32 random bytes as lowercase hex (64 chars). */
export const ADMIN_TOKEN_CHALLENGE = /^[0-9a-f]{64}$/;

/**
 * What a server answers on its public `GET /healthz?adminTokenChallenge=<hex>` (`adminTokenProof`)
 * to prove that it holds the admin token of its data folder (`<data>/admin-token`) without anyone
 * sending it: HMAC-SHA256 keyed by the token's hash ({@link hashToken}) over a fixed label and
 * the challenge (RFC 2104), lowercase hex. The CLI sends a fresh random challenge and checks the
 * proof before sending that token to a server on this machine (cli/options.ts resolveToken): a
 * mistyped port reaching some other local service got the admin token in its Authorization
 * header (fresh-tester finding). A fixed value would do against a harmless service but could be
 * copied by any local process from the real server's reply (fresh-tester finding), so each
 * proof answers one challenge. Not caught: a process that relays the challenge to the real
 * server. @throws nothing (any string is hashed).
 */
export function adminTokenProof(token: string, challenge: string): string {
  return createHmac('sha256', hashToken(token)).update(`flotilla admin-token proof\n${challenge}`, 'utf8').digest('hex');
}
