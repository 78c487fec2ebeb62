import { createHash, randomBytes } from 'node:crypto';

/**
 * Secrets Flotilla hands out. Each kind has a prefix so a leaked one is recognisable (and
 * redacted by core/log.ts): `fla_` API token, `flr_` runner registration token, `flc_` runner
 * credential, `flj_` job token (the harness's model key at the gateway). Only the SHA-256 hash
 * is ever stored.
 */
export type TokenKind = 'fla' | 'flr' | 'flc' | 'flj';

/** A new random token: `<kind>_<43 chars of base64url>` (256 bits). */
export function newToken(kind: TokenKind): string {
  return `${kind}_${randomBytes(32).toString('base64url')}`;
}

/** SHA-256 of the token, lowercase hex (64 chars): what the store keeps and looks up. */
export function hashToken(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}
