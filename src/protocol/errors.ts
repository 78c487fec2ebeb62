import { z } from 'zod';

/**
 * Every API error body: `{ "error": { "code": "...", "message": "...", "field": "input.repo" } }`.
 * `code` is stable and machine-readable; `message` names what is wrong; `field` (when known)
 * is the dotted path of the offending input.
 */
export const ApiErrorBody = z.object({
  error: z.object({
    code: z.string(),
    message: z.string(),
    field: z.string().optional(),
  }),
});
export type ApiErrorBody = z.infer<typeof ApiErrorBody>;

/** A zod issue as {@link describeIssues} and {@link resolveIssue} read it (zod 4's `invalid_union` carries its branches' issues). */
export interface ZodIssueLike {
  path: ReadonlyArray<PropertyKey>;
  message: string;
  code?: string;
  expected?: unknown;
  errors?: ReadonlyArray<ReadonlyArray<ZodIssueLike>>;
  /** zod 4's `invalid_key` (a record's key refused) carries the key schema's issues. */
  issues?: ReadonlyArray<ZodIssueLike>;
}

/**
 * The message for a number JSON.parse read as ±Infinity (a literal past ±1.8e308, RFC 8259 §6
 * leaves the range to the parser): zod's own says "expected number, received Infinity" of a
 * body that holds no "Infinity" (fresh-user finding: `{"addUsd":1e400}`).
 */
export const OUT_OF_RANGE = 'number out of range (JSON numbers beyond ±1.8e308 cannot be read)';

/**
 * `issue` with a field that may take several shapes (a zod union) said in words: zod's own
 * message for it is only "Invalid input" (fresh-user finding: `input: Invalid input` for a
 * Responses body with no input). When some branch got past the field's own type (e.g. an array
 * of the wrong items), that branch's first issue, its path joined on; when every branch failed
 * on the type, `Invalid input: expected string or array, received undefined`. A number read as
 * ±Infinity: {@link OUT_OF_RANGE}. A record key refused: the key rule's message. Other issues as given.
 */
export function resolveIssue(issue: ZodIssueLike): { path: ReadonlyArray<PropertyKey>; message: string } {
  if (issue.code === 'invalid_type' && /received (-?Infinity|NaN)\b/.test(issue.message)) return { path: issue.path, message: OUT_OF_RANGE };
  // "Invalid key in record" said why: the key schema's own message
  if (issue.code === 'invalid_key' && issue.issues?.[0]) return { path: issue.path, message: issue.issues[0].message };
  const firsts = issue.code === 'invalid_union' ? (issue.errors ?? []).map((b) => b[0]).filter((i): i is ZodIssueLike => i !== undefined) : [];
  if (firsts.length === 0) return issue;
  const deepest = firsts.reduce((a, b) => (b.path.length > a.path.length ? b : a));
  if (deepest.path.length > 0) {
    const inner = resolveIssue(deepest);
    return { path: [...issue.path, ...inner.path], message: inner.message };
  }
  if (firsts.every((i) => i.code === 'invalid_type' && typeof i.expected === 'string')) {
    const received = /received (\w+)/.exec(firsts[0]!.message)?.[1];
    const expected = [...new Set(firsts.map((i) => i.expected as string))].join(' or ');
    return { path: issue.path, message: `Invalid input: expected ${expected}${received ? `, received ${received}` : ''}` };
  }
  return issue;
}

/** Formats zod issues as `path: message; path2: message2` ({@link resolveIssue} for each), for error messages that name the field. */
export function describeIssues(issues: ReadonlyArray<ZodIssueLike>): string {
  return issues
    .map(resolveIssue)
    .map((i) => (i.path.length ? `${i.path.map(String).join('.')}: ${i.message}` : i.message))
    .join('; ');
}
