import { cutEcho } from '../protocol/echo.js';
import type { Context } from 'hono';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import type { z } from 'zod';
import { findInfinite, findNul, mayHoldInfinite, parseJsonBounded } from '../core/json-depth.js';
import { findRepeatedKey } from '../core/json-keys.js';
import { describeIssues, ID_RANGE, MAX_ID, OUT_OF_RANGE, type ApiErrorBody } from '../protocol/index.js';

/**
 * Sends the API error body `{ error: { code, message, field? } }` with the given HTTP status.
 * `code` is stable (`invalid_json`, `invalid_request`, `unauthorized`, ...); `field` is the
 * dotted path of the offending input when known.
 */
export function apiError(c: Context, status: ContentfulStatusCode, code: string, message: string, field?: string): Response {
  const body: ApiErrorBody = { error: { code, message, ...(field ? { field } : {}) } };
  return c.json(body, status);
}

/**
 * The 400 `invalid_request` for a JSON body `text` that gives a key twice in one object (field:
 * its dotted path, cut at 100 characters; no value is repeated back), or null when it gives none.
 */
export function repeatedKeyError(c: Context, text: string): Response | null {
  const at = findRepeatedKey(text);
  if (at === null) return null;
  const field = cutEcho(at);
  return apiError(c, 400, 'invalid_request', `${field}: given twice in the request body; give each field once`, field);
}

/** Result of {@link readBody}: the parsed value, or the error response to return. */
export type BodyResult<T> = { ok: true; value: T } | { ok: false; response: Response };

/**
 * Reads the request body as JSON and validates it with `schema`.
 * Non-JSON (or empty, or nested deeper than core/json-depth.ts MAX_JSON_DEPTH) → 400 `invalid_json`;
 * a string or key holding NUL (U+0000, which PostgreSQL text cannot store) → 400 `invalid_request` naming it; a number past
 * ±1.8e308 anywhere (JSON.parse: Infinity, stored as null) → 400 `invalid_request` naming it; a key given twice in one
 * object (JSON.parse would keep the last: core/json-keys.ts) → 400 `invalid_request` naming it ({@link repeatedKeyError}); schema failure → 400 `invalid_request` whose
 * message names every failing field (`labels.os: ...`) and whose `field` is the first one.
 */
export async function readBody<S extends z.ZodType>(c: Context, schema: S): Promise<BodyResult<z.output<S>>> {
  let raw: unknown;
  let text: string;
  try {
    text = await c.req.text();
    raw = parseJsonBounded(text);
  } catch (err) {
    const deep = err instanceof RangeError ? ` (${err.message})` : '';
    return { ok: false, response: apiError(c, 400, 'invalid_json', `request body must be a JSON document${deep}`) };
  }
  // JSON can carry NUL only as the escape \u0000: look for it only then.
  const nulAt = text.includes('\\u0000') ? findNul(raw) : null;
  if (nulAt) return { ok: false, response: apiError(c, 400, 'invalid_request', `${nulAt}: text must not contain NUL (U+0000)`, nulAt) };
  // a number past ±1.8e308 (JSON.parse: Infinity) would be stored as null
  const infiniteAt = mayHoldInfinite(text) ? findInfinite(raw) : null;
  if (infiniteAt) {
    const field = cutEcho(infiniteAt);
    return { ok: false, response: apiError(c, 400, 'invalid_request', `${field}: ${OUT_OF_RANGE}`, field) };
  }
  const repeated = repeatedKeyError(c, text);
  if (repeated) return { ok: false, response: repeated };
  const parsed = schema.safeParse(raw);
  if (!parsed.success) {
    const first = parsed.error.issues[0];
    return { ok: false, response: apiError(c, 400, 'invalid_request', describeIssues(parsed.error.issues), first && issueField(first)) };
  }
  return { ok: true, value: parsed.data };
}

/**
 * The `field` of an API error for a zod issue: its dotted path, and for an unknown key the key
 * itself under it (`extra`, `price.foo`: the object's path alone named no field at the top
 * level, fresh-user finding), cut as echoes are; undefined for an issue of the whole body.
 */
function issueField(issue: z.core.$ZodIssue): string | undefined {
  const path: PropertyKey[] = [...issue.path];
  if (issue.code === 'unrecognized_keys' && issue.keys.length > 0) path.push(issue.keys[0]!);
  return path.length ? cutEcho(path.map(String).join('.')) : undefined;
}

/**
 * The peer address of the TCP connection (`c.env.incoming`, as @hono/node-server passes it), or
 * `unknown`. Forwarded-for headers are not trusted: a client could set them to anything.
 */
export function clientAddress(c: Context): string {
  const env = c.env as { incoming?: { socket?: { remoteAddress?: string } } } | undefined;
  return env?.incoming?.socket?.remoteAddress ?? 'unknown';
}

/**
 * 400 `invalid_request` naming the first query parameter of the request that is not in
 * `allowed`, or that is given more than once, or null when there is neither. A misspelt or
 * unsupported parameter (e.g. `cursor` where a list pages with `before`) must not be silently
 * ignored, nor the second of `by=job&by=tree` (every parameter here takes one value: the first
 * was read without a word, fresh-user finding).
 */
export function unknownQueryParam(c: Context, allowed: readonly string[]): Response | null {
  for (const [name, values] of Object.entries(c.req.queries())) {
    if (allowed.includes(name)) {
      if (values.length > 1) return apiError(c, 400, 'invalid_request', `${name}: given ${values.length} times; give it once`, name);
      continue;
    }
    const hint = name === 'cursor' && allowed.includes('before') ? ': this list pages with before (the id the previous page ends at)' : '';
    const takes = allowed.length ? `this endpoint takes ${allowed.join(', ')}` : 'this endpoint takes none';
    // a name of thousands of characters is not echoed whole, twice (message and field)
    const shown = cutEcho(name);
    return apiError(c, 400, 'invalid_request', `${shown}: unknown query parameter${hint} (${takes})`, shown);
  }
  return null;
}

/**
 * Parses a positive integer path/query parameter that is not an id (a page `limit`: the caller
 * checks its own maximum); null when absent or malformed. Ids go through {@link parseId}.
 */
export function parsePositiveInt(text: string | undefined): number | null {
  if (text === undefined || !/^[0-9]{1,15}$/.test(text)) return null;
  const n = Number(text);
  return n > 0 ? n : null;
}

/**
 * Parses an id path/query parameter (a job, runner, task, receiver or API token id; an event
 * seq; a task turn): decimal digits, 1 to protocol MAX_ID (2,147,483,647, the PostgreSQL
 * `integer` the store keeps them in). null when absent, malformed or out of range: answer
 * with {@link idError}, so both engines refuse the same ids the same way (PostgreSQL would
 * otherwise fail the query with "value out of range for type integer", a 500).
 */
export function parseId(text: string | undefined): number | null {
  if (text === undefined || !/^[0-9]{1,15}$/.test(text)) return null;
  const n = Number(text);
  return n > 0 && n <= MAX_ID ? n : null;
}

/**
 * 400 `invalid_request` for an id parameter {@link parseId} refused: message
 * `<field>: must be an integer from 1 to 2147483647 (<what>)`, field `<field>`.
 * `what` says what the id names (`a job id`, `an event seq`), or is left out.
 */
export function idError(c: Context, field: string, what?: string): Response {
  return apiError(c, 400, 'invalid_request', `${field}: ${ID_RANGE}${what ? ` (${what})` : ''}`, field);
}
