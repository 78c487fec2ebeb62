/**
 * Finding a server key in JSON text however JSON wrote it (RFC 8259 §7: any character as
 * `\uXXXX`, and `"`, `\`, `/` and the controls also as `\"`, `\\`, `\/`, `\n`, ...), for
 * key-mask.ts: an upstream echoing the key with escapes got it to the job unmasked (fresh-user
 * finding). Byte-level, on UTF-8: a key's character is matched as its UTF-8 bytes or as an escape.
 */

/** The backslash byte. */
export const BACKSLASH = 0x5c;

/** One character of a key: its UTF-8 bytes, and the `\uXXXX` escapes of its UTF-16 code units as JSON writes them. */
export interface KeyChar {
  literal: Buffer;
  units: number[];
}

/** A configured key: its text, bytes, mask, and characters (for its JSON-escaped forms). */
export interface MaskedKey {
  text: string;
  bytes: Buffer;
  mask: Buffer;
  chars: KeyChar[];
  /** Most bytes a JSON-escaped form of the key can take (every character as `\uXXXX`). */
  maxEscaped: number;
}

/** JSON's two-character escapes (RFC 8259 §7): the character's code → the letter after the backslash. */
export const SHORT_ESCAPES: ReadonlyMap<number, number> = new Map([
  [0x22, 0x22], // \"
  [0x5c, 0x5c], // \\
  [0x2f, 0x2f], // \/
  [0x08, 0x62], // \b
  [0x0c, 0x66], // \f
  [0x0a, 0x6e], // \n
  [0x0d, 0x72], // \r
  [0x09, 0x74], // \t
]);

export const NO_MATCH = -1;
/** {@link escapedEnd}: `buf` ended while it still read as the key's start. */
export const PREFIX = -2;
const HEX = (b: number): number => (b >= 0x30 && b <= 0x39 ? b - 0x30 : b >= 0x41 && b <= 0x46 ? b - 0x37 : b >= 0x61 && b <= 0x66 ? b - 0x57 : -1);

/**
 * Where a form of `key` (each character literal or JSON-escaped) that starts at `at` in `buf`
 * ends (exclusive); {@link NO_MATCH}; or {@link PREFIX} when `buf` ends inside such a form.
 */
export function escapedEnd(buf: Buffer, at: number, key: MaskedKey): number {
  let p = at;
  for (const c of key.chars) {
    if (p >= buf.length) return PREFIX;
    if (buf[p] !== BACKSLASH) {
      const n = Math.min(c.literal.length, buf.length - p);
      if (buf.compare(c.literal, 0, n, p, p + n) !== 0) return NO_MATCH;
      if (n < c.literal.length) return PREFIX;
      p += n;
      continue;
    }
    const short = c.units.length === 1 ? SHORT_ESCAPES.get(c.units[0]!) : undefined;
    if (short !== undefined && p + 1 < buf.length && buf[p + 1] === short) {
      p += 2; // `\"`, `\\`, `\/`, ...
      continue;
    }
    for (const unit of c.units) {
      // `\u` and four hex digits of `unit`, any case
      for (let k = 0; k < 6; k++) {
        if (p + k >= buf.length) return PREFIX;
        const b = buf[p + k]!;
        const ok = k === 0 ? b === BACKSLASH : k === 1 ? b === 0x75 : HEX(b) === ((unit >> (4 * (5 - k))) & 0xf);
        if (!ok) return NO_MATCH;
      }
      p += 6;
    }
  }
  return p;
}

/** The places in `buf` from `from` where a form of `key` could start: its first character's first byte, or a backslash. */
export function* starts(buf: Buffer, key: MaskedKey, from: number): Generator<number> {
  const first = key.chars[0]!.literal[0]!;
  let a = buf.indexOf(first, from);
  let b = buf.indexOf(BACKSLASH, from);
  while (a >= 0 || b >= 0) {
    const i = a < 0 ? b : b < 0 ? a : Math.min(a, b);
    yield i;
    if (i === a) a = buf.indexOf(first, i + 1);
    if (i === b) b = buf.indexOf(BACKSLASH, i + 1);
  }
}

/**
 * True when `buf` holds a JSON escape a key could be written with: `\u`, or the two-character
 * escape of a character some key has (`letters`: usually none, or `/`); only then can a key be
 * in it escaped. (`\n` in a reply's text, the common escape, is no key's.)
 */
export function hasEscapes(buf: Buffer, letters: ReadonlySet<number>): boolean {
  for (let i = buf.indexOf(BACKSLASH); i >= 0; i = buf.indexOf(BACKSLASH, i + 2)) {
    const n = buf[i + 1];
    if (n === undefined || n === 0x75 || letters.has(n)) return true;
  }
  return false;
}

