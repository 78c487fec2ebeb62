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
