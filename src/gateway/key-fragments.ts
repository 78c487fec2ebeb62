/**
 * Masks PARTS of the server's upstream API keys in the error replies a job gets (key-mask.ts
 * masks whole keys everywhere): an upstream or a proxy in front of it that echoes a key cut
 * short (`invalid key sk-ant-api03-…` with its end left off, the first 30 characters in a
 * header) gave the job most of the key — and with the whole-key mask's last 4 characters, all of
 * it (fresh-tester finding). Any run of characters that keys are made of and that holds
 * {@link FRAGMENT_CHARS} consecutive characters of a key (with a digit or a capital among them:
 * not a word) is replaced by {@link FRAGMENT_MASK}.
 *
 * Only error replies (status ≥ 400: where providers and proxies echo what they were sent) are
 * searched: every window of every key is one native `indexOf` over the body, too much for every
 * served reply (2xx replies get the whole-key mask, key-mask.ts).
 */

/** Consecutive characters of a key that make a run of key characters a fragment to mask. */
export const FRAGMENT_CHARS = 10;

/** What a fragment is replaced by (ASCII, no `"` or `\`: it lands inside JSON strings and headers). */
export const FRAGMENT_MASK = '[redacted key fragment]';

/** A window worth looking for: it holds a digit or a capital letter (see the constructor). */
const SECRET_LIKE = /[0-9A-Z]/;

/** The characters a fragment's run may extend over, when a key holds them. */
const RUN_CHAR = /^[A-Za-z0-9\-_.~+/=]$/;

/** See the module comment. */
export class KeyFragments {
  /** Every window of {@link FRAGMENT_CHARS} characters of every key longer than that. */
  private readonly windows: string[];
  /** The characters keys are made of: a fragment's run extends over them. */
  private readonly keyChars: ReadonlySet<number>;

  /** `keys`: the configured keys (KeyMask's, already split, deduplicated and at least 8 characters). */
  constructor(keys: readonly string[]) {
    const windows = new Set<string>();
    const chars = new Set<number>();
    for (const k of keys) {
      if (k.length <= FRAGMENT_CHARS) continue; // masked whole by key-mask.ts
      for (let i = 0; i + FRAGMENT_CHARS <= k.length; i++) {
        const w = k.slice(i, i + FRAGMENT_CHARS);
        // a window of lower-case letters and dashes may be a word (`sk-test-background` holds
        // "background"): only windows with a digit or a capital, as nearly every window of a
        // random key has (all but (26/62)^10 ≈ 0.02 % of base-62 ones), are looked for
        if (SECRET_LIKE.test(w)) windows.add(w);
      }
      // a run extends only over the characters keys are usually made of: never over `"`, `\\` or
      // a space (a key holding one must not make a fragment swallow JSON or header structure)
      for (let i = 0; i < k.length; i++) if (RUN_CHAR.test(k[i]!)) chars.add(k.charCodeAt(i));
    }
    this.windows = [...windows];
    this.keyChars = chars;
  }

  /** True when there is anything to mask. */
  get active(): boolean {
    return this.windows.length > 0;
  }

  /** `s` with every run of key characters that holds a window of a key replaced by {@link FRAGMENT_MASK}. */
  text(s: string): string {
    let out = s;
    for (const w of this.windows) {
      let at = out.indexOf(w);
      while (at !== -1) {
        let from = at;
        let to = at + w.length;
        while (from > 0 && this.keyChars.has(out.charCodeAt(from - 1))) from--;
        while (to < out.length && this.keyChars.has(out.charCodeAt(to))) to++;
        out = out.slice(0, from) + FRAGMENT_MASK + out.slice(to);
        at = out.indexOf(w, from + FRAGMENT_MASK.length);
      }
    }
    return out;
  }

  /** `buf` (UTF-8) with {@link text}'s masking; the same buffer when it holds no window. */
  bytes(buf: Buffer): Buffer {
    if (!this.windows.some((w) => buf.includes(w))) return buf;
    return Buffer.from(this.text(buf.toString('utf8')));
  }
}
