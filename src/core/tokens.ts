import { createHash, randomBytes } from 'node:crypto';

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

/**
 * What a server shows, on its public `GET /healthz` (`adminTokenCheck`), to prove that it holds
 * the admin token of its data folder (`<data>/admin-token`) without anyone sending it: SHA-256
 * of a fixed label and the token's own hash ({@link hashToken}), lowercase hex (64 chars). The
 * CLI computes it from the file before sending that token to a server on this machine
 * (cli/options.ts resolveToken): a mistyped port reaching some other local service got the
 * admin token in its Authorization header (fresh-tester finding). Nothing is learnt from it: the
 * token is 256 random bits, and a token's hash does not authenticate (the server hashes what it gets).
 */
export function adminTokenCheck(token: string): string {
  return createHash('sha256').update(`flotilla admin-token check\n${hashToken(token)}`, 'utf8').digest('hex');
}
