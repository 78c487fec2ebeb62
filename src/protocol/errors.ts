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

/** Formats zod issues as `path: message; path2: message2`, for error messages that name the field. */
export function describeIssues(issues: ReadonlyArray<{ path: ReadonlyArray<PropertyKey>; message: string }>): string {
  return issues
    .map((i) => (i.path.length ? `${i.path.map(String).join('.')}: ${i.message}` : i.message))
    .join('; ');
}
