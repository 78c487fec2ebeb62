import type { Context } from 'hono';
import { z } from 'zod';
import { describeIssues } from '../../protocol/index.js';
import { apiError, type BodyResult } from '../http-util.js';

/** The body of an action that takes no fields (`POST /api/runners/{id}/resume`, `/revoke`): `{}` and nothing else. */
export const EmptyRequest = z.object({}).strict();

/**
 * Reads the body of an action that takes no fields: none at all (or only whitespace), or the
 * JSON `{}`. Anything else → 400: text that is not JSON → `invalid_json`; JSON other than an
 * object (`[]`, `null`, a string) or an object with fields → `invalid_request` whose message
 * names the problem (`Unrecognized key: "force"`; `field` the first such key) and says what to
 * send. The client SDK sends `{}`; curl without `-d` sends nothing.
 */
export async function readEmptyBody(c: Context): Promise<BodyResult<Record<string, never>>> {
  const text = await c.req.text();
  if (text.trim() === '') return { ok: true, value: {} };
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    return { ok: false, response: apiError(c, 400, 'invalid_json', 'request body must be empty or the JSON document {}') };
  }
  const parsed = EmptyRequest.safeParse(raw);
  if (parsed.success) return { ok: true, value: {} };
  const first = parsed.error.issues[0];
  const field = first?.code === 'unrecognized_keys' ? first.keys[0] : undefined;
  return { ok: false, response: apiError(c, 400, 'invalid_request', `${describeIssues(parsed.error.issues)}: this request takes no fields; send no body or {}`, field) };
}
