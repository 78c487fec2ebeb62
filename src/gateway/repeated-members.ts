/**
 * A model-call body that gives a field the gateway reads twice (`{"model":"claude-opus-4-1",
 * …,"model":"claude-haiku-4-5"}`): JSON.parse keeps the last, so the gateway would route,
 * reserve and charge on one value while an upstream (or a proxy between) that keeps the first
 * serves the other — Opus with a 60,000-token limit charged as Haiku with 10 (fresh-tester
 * finding). RFC 8259 §4 leaves such a body's meaning to each reader ("names within an object
 * SHOULD be unique"), so the gateway refuses it (400, the wire format's `invalid_request_error`)
 * rather than guess which one the provider reads. Checked: the watched top-level members, and
 * every member of each object in `tools` / `mcp_servers` and of `stream_options` — a tool's
 * `type`, `max_uses`, `quality` or `container` sets what the call is reserved and charged for
 * (fresh-tester finding: `"max_uses":50,"max_uses":1` reserved one web search and went upstream
 * with both). Deeper repeats (a tool's input schema) and other fields pass as given.
 *
 * Cost: one pass over the top-level object that skips every string with `indexOf('"')` and
 * reads only the structure between them (a 300 KB Claude Code-like body: ~85 µs; searching it
 * for each watched name's quoted spelling instead took ~1.4 ms, V8's multi-character indexOf
 * being ~1 ns a byte), then the members of the tools, MCP servers and stream_options.
 */

/** Fields each wire format's routes read to route, reserve, meter or refuse a call (top-level members). */
export const WATCHED_MEMBERS = {
  'anthropic-messages': ['model', 'max_tokens', 'stream', 'messages', 'system', 'tools', 'mcp_servers'],
  'openai-chat': ['model', 'max_tokens', 'max_completion_tokens', 'n', 'stream', 'stream_options', 'messages', 'tools'],
  'openai-responses': ['model', 'max_output_tokens', 'max_tokens', 'max_completion_tokens', 'stream', 'stream_options', 'input', 'instructions', 'tools', 'background', 'previous_response_id', 'conversation', 'prompt', 'max_tool_calls', 'store'],
} as const satisfies Record<string, readonly string[]>;

/** Top-level members whose own objects' members are all checked: arrays of objects, or one object. */
const NESTED: Readonly<Record<string, 'array' | 'object'>> = { tools: 'array', mcp_servers: 'array', stream_options: 'object' };

/** The refusal's text for a member given twice (here, and for a member json-edit.ts cannot edit faithfully). */
export const givenTwice = (name: string): string => `${name}: given twice in the request body; give each field once`;

/**
 * The path (`model`, `tools[2].max_uses`, `stream_options.include_usage`) of the first member
 * that the JSON object `raw` (already known to be valid JSON) gives twice, among the top-level
 * `watched` and the members of the objects in `tools`, `mcp_servers` and `stream_options`, by
 * decoded name (`"model"` and `"\u006dodel"` are one name); null when none is.
 */
export function repeatedMember(raw: string, watched: readonly string[]): string | null {
  const open = skipSpace(raw, 0);
  if (raw.charCodeAt(open) !== 0x7b) return null;
  const top = members(raw, open);
  return firstRepeat(top, watched) ?? nestedRepeat(raw, top.filter((m) => watched.includes(m.key)));
}

/** The first repeat among the members of `nested` (tools, mcp_servers: each object of the array; stream_options: the object), as a path, or null. */
function nestedRepeat(raw: string, nested: readonly Member[]): string | null {
  for (const m of nested) {
    const kind = NESTED[m.key];
    if (kind === undefined) continue;
    if (kind === 'object') {
      if (raw.charCodeAt(m.value) !== 0x7b) continue;
      const inner = firstRepeat(members(raw, m.value), null);
      if (inner !== null) return `${m.key}.${inner}`;
      continue;
    }
    if (raw.charCodeAt(m.value) !== 0x5b) continue;
    let i = 0;
    for (const at of elements(raw, m.value)) {
      if (raw.charCodeAt(at) === 0x7b) {
        const inner = firstRepeat(members(raw, at), null);
        if (inner !== null) return `${m.key}[${i}].${inner}`;
      }
      i++;
    }
  }
  return null;
}

/** The first key given twice among `ms` (only those in `only`, when given), or null. */
function firstRepeat(ms: readonly Member[], only: readonly string[] | null): string | null {
  const seen = new Set<string>();
  for (const { key } of ms) {
    if (only !== null && !only.includes(key)) continue;
    if (seen.has(key)) return key;
    seen.add(key);
  }
  return null;
}

/** One member of an object: its decoded key and where its value starts in the text. */
interface Member {
  key: string;
  value: number;
}

/** The members of the object whose `{` is at `open` in valid JSON `raw`, in order (repeats included). */
function members(raw: string, open: number): Member[] {
  const out: Member[] = [];
  let i = skipSpace(raw, open + 1);
  while (raw.charCodeAt(i) === 0x22) {
    const end = stringEnd(raw, i);
    const text = raw.slice(i, end + 1);
    const key = text.includes('\\') ? (JSON.parse(text) as string) : text.slice(1, -1);
    const value = skipSpace(raw, skipSpace(raw, end + 1) + 1); // past the ':'
    out.push({ key, value });
    i = skipSpace(raw, skipValue(raw, value));
    if (raw.charCodeAt(i) !== 0x2c) break;
    i = skipSpace(raw, i + 1);
  }
  return out;
}

/** Where each element of the array whose `[` is at `open` in valid JSON `raw` starts. */
function elements(raw: string, open: number): number[] {
  const out: number[] = [];
  let i = skipSpace(raw, open + 1);
  if (raw.charCodeAt(i) === 0x5d) return out;
  for (;;) {
    out.push(i);
    i = skipSpace(raw, skipValue(raw, i));
    if (raw.charCodeAt(i) !== 0x2c) return out;
    i = skipSpace(raw, i + 1);
  }
}

/** Index just past the JSON value starting at `i` in valid JSON `raw` (strings skipped with indexOf). */
function skipValue(raw: string, i: number): number {
  const c = raw.charCodeAt(i);
  if (c === 0x22) return stringEnd(raw, i) + 1;
  if (c === 0x7b || c === 0x5b) {
    let depth = 0;
    for (; i < raw.length; i++) {
      const d = raw.charCodeAt(i);
      if (d === 0x22) i = stringEnd(raw, i);
      else if (d === 0x7b || d === 0x5b) depth++;
      else if ((d === 0x7d || d === 0x5d) && --depth === 0) return i + 1;
    }
    return raw.length;
  }
  // a number, true, false or null: up to the next delimiter
  while (i < raw.length) {
    const d = raw.charCodeAt(i);
    if (d === 0x2c || d === 0x7d || d === 0x5d || d === 0x20 || d === 0x0a || d === 0x0d || d === 0x09) break;
    i++;
  }
  return i;
}

/** The first index at or after `i` that is not JSON whitespace. */
function skipSpace(raw: string, i: number): number {
  for (;;) {
    const c = raw.charCodeAt(i);
    if (c !== 0x20 && c !== 0x0a && c !== 0x0d && c !== 0x09) return i;
    i++;
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
