import { randomBytes, scrypt as scryptCb, timingSafeEqual, type ScryptOptions } from 'node:crypto';

/**
 * Password hashing with node:crypto scrypt: N=2^15, r=8, p=1 (32 MiB, about 50–100 ms here;
 * twice the cost of the scrypt paper's interactive-login setting N=2^14, RFC 7914 §2; below
 * OWASP's 2^17, chosen so sign-in stays quick on a 2-core box; raise N here and old hashes
 * still verify). 16-byte random salt, 32-byte key.
 * Stored form: `scrypt$<N>$<r>$<p>$<salt base64url>$<key base64url>`, so the cost can rise
 * later without breaking stored hashes.
 */
const N = 1 << 15;
const R = 8;
const P = 1;
const KEY_LEN = 32;
/** scrypt needs 128·N·r bytes; give it room. */
const MAXMEM = 256 * 1024 * 1024;

function scrypt(password: string, salt: Buffer, keyLen: number, opts: ScryptOptions): Promise<Buffer> {
  return new Promise((resolve, reject) => scryptCb(password, salt, keyLen, opts, (err, key) => (err ? reject(err) : resolve(key))));
}

/** Hashes `password` (≈100 ms of CPU on this machine). @returns the stored form described above. */
export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const key = await scrypt(password, salt, KEY_LEN, { N, r: R, p: P, maxmem: MAXMEM });
  return `scrypt$${N}$${R}$${P}$${salt.toString('base64url')}$${key.toString('base64url')}`;
}

/**
 * True when `password` matches `stored` (constant-time compare). A malformed or foreign
 * `stored` value gives false, never an exception.
 */
export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const m = /^scrypt\$(\d+)\$(\d+)\$(\d+)\$([A-Za-z0-9_-]+)\$([A-Za-z0-9_-]+)$/.exec(stored);
  if (!m) return false;
  const [n, r, p] = [Number(m[1]), Number(m[2]), Number(m[3])];
  if (n < 2 || n > 1 << 20 || (n & (n - 1)) !== 0 || r < 1 || r > 32 || p < 1 || p > 16) return false;
  const salt = Buffer.from(m[4]!, 'base64url');
  const want = Buffer.from(m[5]!, 'base64url');
  if (want.length < 16) return false;
  try {
    const got = await scrypt(password, salt, want.length, { N: n, r, p, maxmem: MAXMEM });
    return timingSafeEqual(got, want);
  } catch {
    return false;
  }
}

/** A hash of a random password: verifying against it costs the same as a real one (no user-exists timing oracle). */
let dummy: Promise<string> | null = null;
export function dummyPasswordHash(): Promise<string> {
  return (dummy ??= hashPassword(randomBytes(16).toString('hex')));
}
