import { ChunkStream, type ChunkTransform } from './chunk-stream.js';
import type { Reply } from './reply.js';
import { splitKeys } from './retry.js';
import { KeyFragments } from './key-fragments.js';
import { BACKSLASH, escapedEnd, hasEscapes, PREFIX, SHORT_ESCAPES, starts, type KeyChar, type MaskedKey } from './escaped-key.js';

/**
 * Masks the server's upstream API keys in what the gateway passes on to a job (issue 3: an
 * upstream key must never reach a client). Upstreams echo the key they received in error
 * bodies (Anthropic `invalid x-api-key: sk-ant-…`, OpenAI `Incorrect API key provided:
 * sk-proj-…`), and a proxy in between may echo it in a header; a job must not learn it.
 *
 * Every configured key of every provider is masked (a key that failed on one provider may be
 * echoed by another, e.g. a company gateway fronting both) as `[redacted key ...<last 4>]`
 * (ASCII: it may land in a header), so an operator can still tell which key an error was about.
 *
 * A key is masked however JSON wrote it (RFC 8259 §7: any character may be written `\uXXXX`,
 * and `"`, `\`, `/` and the controls also `\"`, `\\`, `\/`, `\n`, ...): `\u0073k-ant…` or
 * `sk\u002dant…` is the key to any JSON decoder (fresh-user finding: an upstream echoing the key
 * with escapes got it to the job unmasked), in a body, a stream or a header; and percent-encoded
 * ({@link encodedForms}: an upstream echoing the URL or query a key was in). Not masked: a reply
 * in a content-encoding the gateway cannot decode (upstream-http.ts passes it with its bytes),
 * or JSON in UTF-16 (RFC 8259 §8.1: JSON between systems is UTF-8).
 *
 * Keys shorter than {@link MIN_MASKED_KEY_LENGTH} are not masked: such a value is no secret
 * (Ollama's customary key is `ollama`) and masking it would garble ordinary text in replies.
 *
 * Cost on the hot path: nothing without keys; else per reply one `includes` per header value
 * and key, one native `Buffer.indexOf` per key over a whole body (and, only when the body holds a
 * `\u` or the escape of a key's character, a walk of the places an escaped key could start,
 * escaped-key.ts), and per streamed chunk the
 * same plus a look at its last bytes (a key split across two chunks is caught: the tail that
 * could start a key is held back until the next chunk, which in SSE — events end in a blank
 * line — is practically never).
 */
export const MIN_MASKED_KEY_LENGTH = 8;

const EMPTY = Buffer.alloc(0);

/**
 * The text that replaces `key`: `[redacted key ...<its last 4 characters>]`, each of them that
 * is not a letter, digit or one of `-_.~+=/` shown as `*`. The mask lands inside JSON strings and
 * headers as it is: a `"` or `\\` there broke the reply's JSON (fresh-user finding).
 */
export function maskedKey(key: string): string {
  return `[redacted key ...${[...key].slice(-4).map((c) => (/^[A-Za-z0-9\-_.~+=/]$/.test(c) ? c : '*')).join('')}]`;
}

/** The {@link MaskedKey} record of `form`, a way `key` may be written (itself, or percent-encoded), masked as `key`. */
function maskedKeyOf(form: string, key = form): MaskedKey {
  const chars: KeyChar[] = [...form].map((ch) => ({ literal: Buffer.from(ch), units: Array.from({ length: ch.length }, (_, i) => ch.charCodeAt(i)) }));
  return { text: form, bytes: Buffer.from(form), mask: Buffer.from(maskedKey(key)), chars, maxEscaped: chars.reduce((n, c) => n + 6 * c.units.length, 0) };
}

/**
 * The forms of `key` an upstream may echo besides itself: percent-encoded (RFC 3986 §2.1), as a
 * URL or a query in an error holds it — `encodeURIComponent`'s, and with every character that
 * is not a letter or digit encoded (`sk%2Dant%2D…`: a fresh tester's upstream echoed it so, and
 * it reached the job unmasked); each with upper- and lower-case hex digits. Only forms that
 * differ from the key.
 */
function encodedForms(key: string): string[] {
  const bytes = Buffer.from(key);
  const every = [...bytes].map((b) => (/[A-Za-z0-9]/.test(String.fromCharCode(b)) ? String.fromCharCode(b) : `%${b.toString(16).toUpperCase().padStart(2, '0')}`)).join('');
  const forms = new Set<string>();
  for (const f of [encodeURIComponent(key), every]) for (const v of [f, f.replace(/%[0-9A-F]{2}/g, (h) => h.toLowerCase())]) if (v !== key) forms.add(v);
  return [...forms];
}

/** See the module comment. */
export class KeyMask {
  private readonly keys: MaskedKey[];
  /** Every form of every key in lower case (a header name holding one is dropped, {@link reply}). */
  private readonly lowered: string[];
  /** Length of the shortest form: a shorter header name holds none. */
  private readonly shortest: number;
  /** Parts of keys, masked in error replies (key-fragments.ts). */
  private readonly fragments: KeyFragments;
  /** The letters of the two-character JSON escapes of the keys' characters (`/` → `/`, `"` → `"`): see hasEscapes. */
  private readonly letters: ReadonlySet<number>;

  /** `keys`: every configured upstream key (duplicates, short ones and comma-separated settings are fine). */
  constructor(keys: readonly string[]) {
    const uniq = [...new Set(keys.flatMap(splitKeys).filter((k) => k.length >= MIN_MASKED_KEY_LENGTH))];
    // Longest first: a key that contains another is masked whole.
    uniq.sort((a, b) => b.length - a.length);
    this.fragments = new KeyFragments(uniq);
    this.keys = uniq.flatMap((k) => [maskedKeyOf(k), ...encodedForms(k).map((f) => maskedKeyOf(f, k))]);
    // longest first again: an encoded form is longer than its key, and may hold another key's text
    this.keys.sort((a, b) => b.text.length - a.text.length);
    this.lowered = [...new Set(this.keys.map((k) => k.text.toLowerCase()))];
    this.shortest = this.keys.length ? Math.min(...this.keys.map((k) => k.text.length)) : Infinity;
    this.letters = new Set(this.keys.flatMap((k) => k.chars.flatMap((c) => (c.units.length === 1 && SHORT_ESCAPES.has(c.units[0]!) ? [SHORT_ESCAPES.get(c.units[0]!)!] : []))));
  }

  /** True when there is anything to mask. */
  get active(): boolean {
    return this.keys.length > 0;
  }

  /** `s` with every key masked, JSON-escaped forms too (a header may carry JSON: fresh-user finding). */
  text(s: string): string {
    let out = s;
    for (const k of this.keys) if (out.includes(k.text)) out = out.split(k.text).join(maskedKey(k.text));
    return out.includes('\\') ? this.bytes(Buffer.from(out)).toString() : out;
  }

  /** `buf` with every key masked (the same buffer when it holds none). */
  bytes(buf: Buffer): Buffer {
    let out = buf;
    for (const k of this.keys) {
      let at = out.indexOf(k.bytes);
      if (at < 0) continue;
      const parts: Buffer[] = [];
      let from = 0;
      while (at >= 0) {
        parts.push(out.subarray(from, at), k.mask);
        from = at + k.bytes.length;
        at = out.indexOf(k.bytes, from);
      }
      parts.push(out.subarray(from));
      out = Buffer.concat(parts);
    }
    return hasEscapes(out, this.letters) ? this.escaped(out) : out;
  }

  /** `buf` with every JSON-escaped form of every key masked (the same buffer when it holds none). */
  private escaped(buf: Buffer): Buffer {
    let out = buf;
    for (const k of this.keys) {
      const parts: Buffer[] = [];
      let from = 0;
      for (const i of starts(out, k, 0)) {
        if (i < from) continue;
        const end = escapedEnd(out, i, k);
        if (end < 0) continue;
        parts.push(out.subarray(from, i), k.mask);
        from = end;
      }
      if (parts.length === 0) continue;
      parts.push(out.subarray(from));
      out = Buffer.concat(parts);
    }
    return out;
  }

  /** Length of the longest end of `buf` that is the start (not the whole) of some key, written plainly or JSON-escaped; 0 mostly. */
  private heldTail(buf: Buffer): number {
    let hold = 0;
    for (const k of this.keys) {
      // an escaped form can only end `buf` where the tail holds a backslash
      const from = Math.max(0, buf.length - k.maxEscaped + 1);
      if (buf.indexOf(BACKSLASH, from) >= 0) {
        for (const i of starts(buf, k, from)) {
          if (buf.length - i <= hold) break;
          if (escapedEnd(buf, i, k) === PREFIX) {
            hold = buf.length - i;
            break;
          }
        }
        continue;
      }
      const first = k.bytes[0]!;
      // only the last (key length − 1) bytes can start an unfinished key
      for (let i = buf.indexOf(first, Math.max(0, buf.length - k.bytes.length + 1)); i >= 0 && i < buf.length; i = buf.indexOf(first, i + 1)) {
        const n = buf.length - i;
        if (n <= hold) break;
        if (buf.compare(k.bytes, 0, n, i) === 0) {
          hold = n;
          break;
        }
      }
    }
    return hold;
  }

  /**
   * A per-stream masking step (chunk-stream.ts): each chunk with every key masked, less the tail
   * that could start a key split across chunks, which is held back and passed on with the next
   * chunk (or at the end). One per stream: it keeps that tail.
   */
  transform(): ChunkTransform {
    let carry: Buffer | null = null;
    return {
      push: (c) => {
        const buf = this.bytes(carry ? Buffer.concat([carry, c]) : c);
        const hold = this.heldTail(buf);
        carry = hold > 0 ? Buffer.from(buf.subarray(buf.length - hold)) : null;
        return hold > 0 ? buf.subarray(0, buf.length - hold) : buf;
      },
      end: () => {
        const rest = carry ?? EMPTY;
        carry = null;
        return rest;
      },
    };
  }

  /** Masks a stream chunk by chunk (see {@link KeyMask.transform}). */
  stream(source: AsyncIterable<Uint8Array>): AsyncIterable<Uint8Array> {
    return ChunkStream.from(source).through(this.transform());
  }

  /**
   * The reply with every key masked in its header values, body and stream, and without a header
   * whose name holds a key (names are lower case, and a mask's `[ ]` and spaces cannot be in one:
   * a fresh tester's upstream sent `x-k-<key>: 1`, which reached the job lower-cased).
   */
  reply(r: Reply): Reply {
    if (this.keys.length === 0) return r;
    let headers = r.headers;
    for (const name in r.headers) {
      if (name.length >= this.shortest && this.lowered.some((k) => name.includes(k))) {
        if (headers === r.headers) headers = { ...r.headers };
        delete headers[name];
        continue;
      }
      const v = r.headers[name]!;
      const m = this.text(v);
      if (m !== v) {
        if (headers === r.headers) headers = { ...r.headers };
        headers[name] = m;
      }
    }
    let body = r.body ? this.bytes(r.body) : r.body;
    // an error reply: parts of keys too (key-fragments.ts), in header values and the body
    if (r.status >= 400 && this.fragments.active) {
      for (const name in headers) {
        const v = headers[name]!;
        const m = this.fragments.text(v);
        if (m !== v) {
          if (headers === r.headers) headers = { ...r.headers };
          headers[name] = m;
        }
      }
      if (body) body = this.fragments.bytes(body);
    }
    if (headers === r.headers && body === r.body && !r.stream) return r;
    const out: Reply = { status: r.status, headers, body };
    if (r.stream) out.stream = ChunkStream.from(r.stream).through(this.transform());
    return out;
  }
}
