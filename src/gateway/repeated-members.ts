/**
 * A model-call body that gives a field the gateway reads twice (`{"model":"claude-opus-4-1",
 * …,"model":"claude-haiku-4-5"}`): JSON.parse keeps the last, so the gateway would route,
 * reserve and charge on one value while an upstream (or a proxy between) that keeps the first
 * serves the other — Opus with a 60,000-token limit charged as Haiku with 10 (fresh-tester
 * finding). RFC 8259 §4 leaves such a body's meaning to each reader ("names within an object
 * SHOULD be unique"), so the gateway refuses it (400, the wire format's `invalid_request_error`)
 * rather than guess which one the provider reads. Fields the gateway does not read pass as given.
 *
 * Cost: the common body is cleared by string searches alone: each watched name's quoted
 * spelling found at most once, and no escaped printable ASCII (`\u0041`, which JSON.stringify
 * never writes, and which could spell a name the searches miss). Otherwise the body's top-level
 * keys are read in one pass that skips string contents with `indexOf`.
 */

/** Fields each wire format's routes read to route, reserve, meter or refuse a call (top-level members). */
export const WATCHED_MEMBERS = {
  'anthropic-messages': ['model', 'max_tokens', 'stream', 'messages', 'system', 'tools', 'mcp_servers'],
  'openai-chat': ['model', 'max_tokens', 'max_completion_tokens', 'n', 'stream', 'stream_options', 'messages', 'tools'],
  'openai-responses': ['model', 'max_output_tokens', 'max_tokens', 'max_completion_tokens', 'stream', 'stream_options', 'input', 'instructions', 'tools', 'background', 'previous_response_id', 'conversation', 'prompt', 'max_tool_calls', 'store'],
} as const satisfies Record<string, readonly string[]>;

/** The refusal's text for a watched member given twice (the same words as json-edit.ts's). */
export const givenTwice = (name: string): string => `${name}: given twice in the request body; give each field once`;

/**
 * The first of `watched` that the JSON object `raw` (already known to be valid JSON) gives twice
 * at its top level, by decoded name (`"model"` and `"\u006dodel"` are one name), or null.
 */
export function repeatedMember(raw: string, watched: readonly string[]): string | null {
  if (!mayRepeat(raw, watched) || !/^\s*\{/.test(raw)) return null;
  const seen = new Set<string>();
  for (const key of topLevelKeys(raw)) {
    if (!watched.includes(key)) continue;
    if (seen.has(key)) return key;
    seen.add(key);
  }
  return null;
}

/** False when no watched name can be given twice: each quoted spelling found at most once and no escaped printable ASCII. */
function mayRepeat(raw: string, watched: readonly string[]): boolean {
  for (const name of watched) {
    const quoted = `"${name}"`;
    const first = raw.indexOf(quoted);
    if (first >= 0 && raw.indexOf(quoted, first + quoted.length) >= 0) return true;
  }
  // `\u0020`–`\u007F`: a name spelled with escapes (a JSON-escaped backslash before a literal
  // "u00…" matches too: only the slower, exact path follows)
  for (let i = raw.indexOf('\\u00'); i >= 0; i = raw.indexOf('\\u00', i + 4)) {
    const c = raw.charCodeAt(i + 4);
    if (c >= 0x32 && c <= 0x37) return true; // '2'..'7'
  }
  return false;
}

/** The keys of the top-level object of valid JSON `raw`, decoded, in order (repeats included). */
function* topLevelKeys(raw: string): Generator<string> {
  let depth = 0;
  let expectKey = false;
  for (let i = 0; i < raw.length; i++) {
    const c = raw.charCodeAt(i);
    if (c === 0x22) {
      const end = stringEnd(raw, i);
      if (depth === 1 && expectKey) {
        const text = raw.slice(i, end + 1);
        yield text.includes('\\') ? (JSON.parse(text) as string) : text.slice(1, -1);
        expectKey = false;
      }
      i = end;
    } else if (c === 0x7b || c === 0x5b) {
      depth++;
      expectKey = depth === 1 && c === 0x7b;
    } else if (c === 0x7d || c === 0x5d) depth--;
    else if (c === 0x2c && depth === 1) expectKey = true;
  }
}

/** Index of the quote closing the string that opens at `start` (valid JSON: there is one). */
function stringEnd(raw: string, start: number): number {
  let q = raw.indexOf('"', start + 1);
  for (;;) {
    if (q < 0) return raw.length; // not valid JSON after all: the scan ends
    let backslashes = 0;
    while (raw.charCodeAt(q - 1 - backslashes) === 0x5c) backslashes++;
    if (backslashes % 2 === 0) return q;
    q = raw.indexOf('"', q + 1);
  }
}
