/**
 * How deep JSON documents from outside may nest. V8's `JSON.parse` takes any depth, but
 * `JSON.stringify`, zod and CEL recurse, so a 400 KB body of 200,000 `[` (fresh-user report,
 * 2026-11-30) parsed fine and then overflowed the stack while being stored: a 500. Real
 * payloads (GitHub, Gitea, Alertmanager, agent inputs, runner frames) nest fewer than 20 levels.
 */
export const MAX_JSON_DEPTH = 128;

/**
 * The deepest nesting of objects/arrays in JSON text, scanning at most until it passes
 * `limit` (strings, with their escapes, are skipped). Linear, no recursion. Text that is not
 * JSON gives some number; the caller's JSON.parse reports that.
 * @returns the depth reached, capped at `limit + 1`.
 */
export function jsonDepth(text: string, limit: number = MAX_JSON_DEPTH): number {
  let depth = 0;
  let max = 0;
  for (let i = 0; i < text.length; i++) {
    const ch = text.charCodeAt(i);
    if (ch === 0x22 /* " */) {
      for (i++; i < text.length; i++) {
        const c = text.charCodeAt(i);
        if (c === 0x5c /* \ */) i++;
        else if (c === 0x22) break;
      }
    } else if (ch === 0x7b /* { */ || ch === 0x5b /* [ */) {
      if (++depth > max && (max = depth) > limit) return limit + 1;
    } else if (ch === 0x7d /* } */ || ch === 0x5d /* ] */) {
      depth--;
    }
  }
  return max;
}

/**
 * `JSON.parse` for text from outside, refusing documents nested deeper than `limit`.
 * @throws SyntaxError from JSON.parse; RangeError `JSON nested deeper than N levels` (checked first).
 */
export function parseJsonBounded(text: string, limit: number = MAX_JSON_DEPTH): unknown {
  if (jsonDepth(text, limit) > limit) throw new RangeError(`JSON nested deeper than ${limit} levels`);
  return JSON.parse(text);
}

/**
 * The dotted path of the first string (value or key) in `value` holding NUL (U+0000), or null.
 * PostgreSQL text cannot hold NUL (`invalid byte sequence for encoding "UTF8": 0x00`), so such
 * input must be refused (the API) or replaced (webhooks) before it reaches the store. Recurses:
 * call it on values parsed by {@link parseJsonBounded}.
 */
export function findNul(value: unknown, path = ''): string | null {
  if (typeof value === 'string') return value.includes('\u0000') ? path || '(body)' : null;
  if (value === null || typeof value !== 'object') return null;
  for (const [k, v] of Object.entries(value)) {
    const at = path ? `${path}.${k}` : k;
    if (k.includes('\u0000')) return at;
    const hit = findNul(v, at);
    if (hit) return hit;
  }
  return null;
}

/**
 * True when JSON text `text` may hold a number JSON.parse reads as ±Infinity: an exponent of 3
 * digits or more, or a run of 309 digits (past ±1.8e308). A cheap test before {@link findInfinite}.
 */
export function mayHoldInfinite(text: string): boolean {
  return /[eE][+]?0*[1-9][0-9]{2}|[0-9]{309}/.test(text);
}

/**
 * The dotted path of the first number in `value` that is not finite (JSON.parse read a literal
 * past ±1.8e308 as ±Infinity), or null. Such a number would be stored as `null` by
 * JSON.stringify without a word (fresh-user finding: a job's input `[1, 1e400]` ran as
 * `[1, null]`): the API refuses it instead. Recurses like {@link findNul}.
 */
export function findInfinite(value: unknown, path = ''): string | null {
  if (typeof value === 'number') return Number.isFinite(value) ? null : path || '(body)';
  if (value === null || typeof value !== 'object') return null;
  for (const [k, v] of Object.entries(value)) {
    const hit = findInfinite(v, path ? `${path}.${k}` : k);
    if (hit) return hit;
  }
  return null;
}

/** `value` with NUL (U+0000) in every string and key replaced by U+FFFD (webhook payloads: kept, but storable). */
export function replaceNul(value: unknown): unknown {
  if (typeof value === 'string') return value.replaceAll('\u0000', '\uFFFD');
  if (value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.map(replaceNul);
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k.replaceAll('\u0000', '\uFFFD'), replaceNul(v)]));
}
