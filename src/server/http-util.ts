import type { Context } from 'hono';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import type { z } from 'zod';
import { parseJsonBounded } from '../core/json-depth.js';
import { describeIssues, type ApiErrorBody } from '../protocol/index.js';

/**
 * Sends the API error body `{ error: { code, message, field? } }` with the given HTTP status.
 * `code` is stable (`invalid_json`, `invalid_request`, `unauthorized`, ...); `field` is the
 * dotted path of the offending input when known.
 */
export function apiError(c: Context, status: ContentfulStatusCode, code: string, message: string, field?: string): Response {
  const body: ApiErrorBody = { error: { code, message, ...(field ? { field } : {}) } };
  return c.json(body, status);
}

/** Result of {@link readBody}: the parsed value, or the error response to return. */
export type BodyResult<T> = { ok: true; value: T } | { ok: false; response: Response };

/**
 * Reads the request body as JSON and validates it with `schema`.
 * Non-JSON (or empty, or nested deeper than core/json-depth.ts MAX_JSON_DEPTH) → 400 `invalid_json`; schema failure → 400 `invalid_request` whose
 * message names every failing field (`labels.os: ...`) and whose `field` is the first one.
 */
export async function readBody<S extends z.ZodType>(c: Context, schema: S): Promise<BodyResult<z.output<S>>> {
  let raw: unknown;
  try {
    raw = parseJsonBounded(await c.req.text());
  } catch (err) {
    const deep = err instanceof RangeError ? ` (${err.message})` : '';
    return { ok: false, response: apiError(c, 400, 'invalid_json', `request body must be a JSON document${deep}`) };
  }
  const parsed = schema.safeParse(raw);
  if (!parsed.success) {
    const first = parsed.error.issues[0];
    const field = first && first.path.length ? first.path.map(String).join('.') : undefined;
    return { ok: false, response: apiError(c, 400, 'invalid_request', describeIssues(parsed.error.issues), field) };
  }
  return { ok: true, value: parsed.data };
}

/** Parses a positive integer path/query parameter; null when absent or malformed. */
export function parsePositiveInt(text: string | undefined): number | null {
  if (text === undefined || !/^[0-9]{1,15}$/.test(text)) return null;
  const n = Number(text);
  return n > 0 ? n : null;
}
