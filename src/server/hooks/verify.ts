import { createHash, createHmac, createSecretKey, timingSafeEqual, type KeyObject } from 'node:crypto';

/**
 * Signature checks of webhook deliveries (issue 7), always on the RAW request bytes before
 * any parsing, in constant time. Each returns null when the delivery is authentic, else a
 * short reason for the 401 (never the secret or the expected signature).
 */

/**
 * GitHub: `X-Hub-Signature-256: sha256=<hex HMAC-SHA256 of the body>` (docs.github.com,
 * "Validating webhook deliveries": the HMAC of the payload bytes as sent), compared in
 * constant time. Only the signature is judged here: a signed body that is not UTF-8 is a
 * 400 after this check (receive.ts), not a bad signature.
 */
export function checkGithubSignature(secret: string, raw: Uint8Array, header: string | undefined): string | null {
  if (!header) return 'missing X-Hub-Signature-256 header';
  if (!/^sha256=[0-9a-f]{64}$/.test(header)) return 'X-Hub-Signature-256 must be sha256=<64 hex digits>';
  return sameMac(secret, raw, header.slice('sha256='.length)) ? null : 'signature does not match the body';
}

/** Most secrets whose key objects are kept (receivers are few; past this the cache starts over). */
const MAX_KEYS = 1000;
const keys = new Map<string, KeyObject>();

/**
 * The HMAC key object of `secret`, made once per secret: `createHmac` with a string key
 * imports the key on every call, about a third of the HMAC's cost on a small webhook body.
 */
function keyOf(secret: string): KeyObject {
  let k = keys.get(secret);
  if (!k) {
    if (keys.size >= MAX_KEYS) keys.clear();
    keys.set(secret, (k = createSecretKey(Buffer.from(secret, 'utf8'))));
  }
  return k;
}

/** Whether `hex` (64 hex digits, checked by the caller) is the HMAC-SHA256 of `raw` under `secret`, compared in constant time on the raw digest bytes. */
function sameMac(secret: string, raw: Uint8Array, hex: string): boolean {
  const mac = createHmac('sha256', keyOf(secret)).update(raw).digest();
  const got = Buffer.from(hex, 'hex');
  return got.length === mac.length && timingSafeEqual(mac, got);
}

/** Constant-time comparison of two hex digests (false when the lengths differ). */
function sameHex(a: string, b: string): boolean {
  const x = Buffer.from(a, 'hex');
  const y = Buffer.from(b, 'hex');
  return x.length === y.length && x.length > 0 && timingSafeEqual(x, y);
}

/**
 * Gitea / Forgejo: `X-Gitea-Signature` (Forgejo also `X-Forgejo-Signature`): the bare hex
 * HMAC-SHA256 of the body with the webhook secret (docs.gitea.com, "Webhooks").
 */
export function checkGiteaSignature(secret: string, raw: Uint8Array, header: string | undefined): string | null {
  if (!header) return 'missing X-Gitea-Signature header';
  if (!/^[0-9a-f]{64}$/i.test(header)) return 'X-Gitea-Signature must be 64 hex digits';
  return sameMac(secret, raw, header) ? null : 'signature does not match the body';
}

/** Generic HMAC: `X-Signature-256: sha256=<hex>` (or GitHub's header name), HMAC-SHA256 of the body. */
export function checkGenericHmac(secret: string, raw: Uint8Array, header: string | undefined): string | null {
  if (!header) return 'missing X-Signature-256 header';
  const m = /^sha256=([0-9a-f]{64})$/i.exec(header);
  if (!m) return 'X-Signature-256 must be sha256=<64 hex digits>';
  return sameMac(secret, raw, m[1]!) ? null : 'signature does not match the body';
}

/** Bearer token: SHA-256 of `Authorization: Bearer <token>` compared in constant time with the stored hash. */
export function checkBearer(tokenHash: string, header: string | undefined): string | null {
  const m = header ? /^Bearer\s+(\S+)$/i.exec(header) : null;
  if (!m) return 'missing Authorization: Bearer header';
  return sameHex(createHash('sha256').update(m[1]!).digest('hex'), tokenHash) ? null : 'token does not match';
}
