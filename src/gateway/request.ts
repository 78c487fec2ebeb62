import { z } from 'zod';
import { MAX_OUTPUT_TOKENS_CEILING as PROTOCOL_OUTPUT_CEILING } from '../protocol/index.js';
import { resolveIssue } from '../protocol/errors.js';
import { storedStateRef } from './server-input.js';
import { givenTwice, repeatedMember, WATCHED_MEMBERS } from './repeated-members.js';

/**
 * The part of an Anthropic Messages request body the gateway reads; everything else passes
 * through untouched (the anthropic provider forwards the original bytes).
 */
/** Longest model name a request may give, characters (providers' ids are under 100). */
export const MAX_MODEL_NAME = 256;

const EDGE_SPACE = /^\s|\s$/;
/** Bidirectional formatting characters: stored in the ledger, they reorder how a model name (and the text after it) displays (a fresh tester's `claude-sonnet-4-5\u202e`). */
const BIDI = /[\u200e\u200f\u202a-\u202e\u2066-\u2069]/;

/** Whether `s` holds a control character: C0, DEL or C1 (U+0000-U+001F, U+007F-U+009F). */
function hasControl(s: string): boolean {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x20 || (c >= 0x7f && c <= 0x9f)) return true;
  }
  return false;
}

/**
 * Why `model` is not a model name a request may give, or null when it is one: 1 to
 * {@link MAX_MODEL_NAME} characters (stored in every ledger row, written in logs), no control
 * character and no bidirectional formatting character (no provider names a model so), no whitespace at either end — `"claude-sonnet-4-5 "`
 * is no model a provider serves, and priced by the longest listed prefix it would have been
 * charged as another model (`claude-sonnet-4-`), past an override of `claude-sonnet-4-5`.
 * The one rule of every wire format's `model` (request.ts, openai-wire.ts, refused-model.ts).
 */
export function modelNameProblem(model: string): string | null {
  if (model.length === 0) return 'must not be empty';
  if (model.length > MAX_MODEL_NAME) return `must be at most ${MAX_MODEL_NAME} characters`;
  if (model.includes('\0')) return 'must not contain NUL';
  if (hasControl(model)) return 'must not contain control characters';
  if (BIDI.test(model)) return 'must not contain bidirectional formatting characters (U+200E, U+200F, U+202A to U+202E, U+2066 to U+2069)';
  if (EDGE_SPACE.test(model)) return 'must not begin or end with whitespace';
  return null;
}

/** A request's `model` field ({@link modelNameProblem}'s rule), for the wire formats' zod schemas. */
export const modelName = () =>
  z.string().superRefine((m, ctx) => {
    const problem = modelNameProblem(m);
    if (problem) ctx.addIssue({ code: z.ZodIssueCode.custom, message: problem });
  });

/**
 * Largest output limit (`max_tokens`, and OpenAI's `max_completion_tokens` /
 * `max_output_tokens`) a request may set, tokens (protocol/model-routes.ts, where it also bounds
 * a price entry's `maxOutput`). A fixed ceiling well above any model's maximum output (a
 * request past the model's own is reserved and charged only up to that: max-output.ts): the
 * largest documented today are 128,000 (Claude with the output-128k beta, GPT-5). A larger value is a
 * mistake (1e12 was seen): the budget reserves the request's limit at the output price, so
 * without this check it got the budget refusal and paused the job; past the ceiling it gets
 * 400 `invalid_request_error` naming the field and this figure, and nothing is reserved.
 */
export const MAX_OUTPUT_TOKENS_CEILING = PROTOCOL_OUTPUT_CEILING;

/** The refusal's text for an output limit over {@link MAX_OUTPUT_TOKENS_CEILING}. */
export const OUTPUT_CEILING_MESSAGE = `must be at most ${MAX_OUTPUT_TOKENS_CEILING} (the gateway's ceiling on output tokens per call)`;

/**
 * An output-limit field: an integer from 1 to {@link MAX_OUTPUT_TOKENS_CEILING}. The ceiling is
 * checked first, alone: a limit past 2^53 got zod's "expected int to be <=9007199254740991".
 */
export const outputLimit = () => z.number().max(MAX_OUTPUT_TOKENS_CEILING, { message: OUTPUT_CEILING_MESSAGE, abort: true }).int().min(1);

/**
 * The refusal's text for a `/v1/messages` body without `max_tokens`: Anthropic's own (the
 * Messages API requires the field and answers 400 `invalid_request_error` "max_tokens: Field
 * required"). `/v1/messages/count_tokens` takes no max_tokens and is not refused for it.
 */
export const MAX_TOKENS_REQUIRED = 'max_tokens: Field required';

/**
 * The refusal's text for a `/v1/messages` body whose `messages` is empty: Anthropic's own (400
 * `invalid_request_error` "messages: at least one message is required"). Refused here, as the
 * Chat Completions route refuses its own empty `messages` (fresh tester: the one forwarded, the
 * other refused). `/v1/messages/count_tokens` is not refused for it: a $0 call, its rules the
 * provider's.
 */
export const MESSAGES_REQUIRED = 'messages: at least one message is required';

/**
 * The refusal's text for a body that is not UTF-8: JSON exchanged between systems is UTF-8 (RFC
 * 8259 §8.1), and decoding other bytes would change them (U+FFFD) in what the gateway reads, not
 * in what it would forward.
 */
export const NOT_UTF8 = 'request body is not valid UTF-8 (RFC 8259 §8.1: JSON is UTF-8)';

/**
 * What breaks the rules `/v1/messages` adds to the schema (count_tokens shares the schema and
 * has neither rule): the refusal's text ({@link MAX_TOKENS_REQUIRED}, {@link MESSAGES_REQUIRED}), or null.
 */
export function messagesCallProblem(req: MessagesRequest): string | null {
  if (req.max_tokens === undefined) return MAX_TOKENS_REQUIRED;
  if (req.messages.length === 0) return MESSAGES_REQUIRED;
  return null;
}

export const MessagesRequest = z
  .object({
    model: modelName(),
    messages: z.array(z.object({ role: z.string(), content: z.unknown() }).passthrough()),
    stream: z.boolean().optional(),
    // The Messages API's rule: an integer, at least 1; at most the gateway's ceiling. Optional
    // here (count_tokens has none); /v1/messages refuses a body without it (gateway.ts admit).
    max_tokens: outputLimit().optional(),
    system: z.unknown().optional(),
  })
  .passthrough();
export type MessagesRequest = z.infer<typeof MessagesRequest>;

/**
 * Why a request body is not JSON, as far as it can be said without echoing the body: empty, or
 * starting with a byte order mark (U+FEFF: RFC 8259 §8.1, JSON text sent over a network must
 * not add one; a fresh tester's got only "not valid JSON"), else that it is not valid JSON.
 */
export function notJsonMessage(raw: string): string {
  if (raw.trim() === '') return 'request body is empty: a JSON object is needed';
  if (raw.startsWith('\uFEFF')) return 'request body is not valid JSON: it starts with a byte order mark (U+FEFF), which JSON text must not (RFC 8259 §8.1)';
  return 'request body is not valid JSON';
}

/**
 * Parses the raw body bytes.
 * @returns the request, or `{ error }` with a message naming the bad field (or "body is not
 * JSON", or a field the gateway reads given twice: repeated-members.ts);
 * a body referring to a file stored on the provider (server-input.ts storedStateRef: a block
 * whose `source` is `{type: "file", file_id}`) is an error too: the
 * gateway cannot bound the input it adds.
 */
export function parseMessagesRequest(raw: string): { request: MessagesRequest } | { error: string } {
  let json: unknown;
  try {
    json = JSON.parse(raw);
  } catch {
    return { error: notJsonMessage(raw) };
  }
  const twice = repeatedMember(raw, WATCHED_MEMBERS['anthropic-messages']);
  if (twice !== null) return { error: givenTwice(twice) };
  // Every model call comes through here: the common, valid body is checked by hand (the same
  // rules as the schema, no copy); zod runs when that check fails, for its error message.
  if (isMessagesRequest(json)) return storedRefused(json) ?? { request: json };
  const r = MessagesRequest.safeParse(json);
  if (!r.success) {
    const issue = r.error.issues[0] ? wireIssue(r.error.issues[0]) : undefined;
    return { error: `${issue?.path.join('.') || 'body'}: ${issue?.message ?? 'invalid'}` };
  }
  return storedRefused(r.data) ?? { request: r.data };
}

/**
 * A zod issue of a model call's body as the gateway words it ({@link resolveIssue}), a missing
 * field said as Anthropic says it, "Field required", with the type it takes: `model: Field
 * required (expected string)`, as `max_tokens: Field required` ({@link MAX_TOKENS_REQUIRED}) —
 * not zod's "Invalid input: expected string, received undefined" (fresh tester: the two read
 * as two rules). The OpenAI routes word theirs the same way (openai-wire.ts).
 */
export function wireIssue(issue: Parameters<typeof resolveIssue>[0]): { path: ReadonlyArray<PropertyKey>; message: string } {
  const r = resolveIssue(issue);
  const missing = /^Invalid input: expected (.+), received undefined$/.exec(r.message);
  return missing ? { path: r.path, message: `Field required (expected ${missing[1]})` } : r;
}

/** The refusal of a Messages body referring to provider-stored files, or null. */
function storedRefused(req: MessagesRequest): { error: string } | null {
  const stored = storedStateRef(req, 'anthropic-messages');
  return stored === null ? null : { error: stored.message };
}

/** True when `j` passes {@link MessagesRequest} (same rules, checked without zod's copy). */
function isMessagesRequest(j: unknown): j is MessagesRequest {
  if (!isObject(j) || typeof j.model !== 'string' || modelNameProblem(j.model) !== null || !Array.isArray(j.messages)) return false;
  if (j.stream !== undefined && typeof j.stream !== 'boolean') return false;
  if (j.max_tokens !== undefined && !(Number.isSafeInteger(j.max_tokens) && (j.max_tokens as number) >= 1 && (j.max_tokens as number) <= MAX_OUTPUT_TOKENS_CEILING)) return false;
  for (const m of j.messages as unknown[]) if (!isObject(m) || typeof m.role !== 'string' || !('content' in m)) return false;
  return true;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Concatenated text of a `system` value (string or array of text blocks). */
function textOf(v: unknown): string {
  if (typeof v === 'string') return v;
  if (Array.isArray(v)) return v.map((b) => (b && typeof b === 'object' && typeof (b as { text?: unknown }).text === 'string' ? (b as { text: string }).text : typeof b === 'string' ? b : '')).join('\n');
  return '';
}

/**
 * The harness's working directory as Claude Code states it in its system prompt
 * ("Working directory: /abs/path" or "Primary working directory: ..."), looked for in `system`
 * and in any `role: "system"` message. '' when absent.
 */
export function workingDirectoryOf(req: MessagesRequest): string {
  const texts = [textOf(req.system), ...req.messages.filter((m) => m.role === 'system').map((m) => textOf(m.content))];
  for (const t of texts) {
    const m = /(?:Primary w|W)orking directory:\s*(\S[^\n<]*)/.exec(t);
    if (m?.[1]) return m[1].trim();
  }
  return '';
}
