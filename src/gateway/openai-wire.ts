import { z } from 'zod';
import { modelName, notJsonMessage, outputLimit, wireIssue, type MessagesRequest } from './request.js';
import { jsonReply, type Reply } from './reply.js';
import { storedStateRef } from './server-input.js';
import { editJson } from './json-edit.js';
import { givenTwice, repeatedMember, WATCHED_MEMBERS } from './repeated-members.js';

/**
 * The OpenAI wire formats the gateway speaks: Chat Completions (`/v1/chat/completions`) and
 * Responses (`/v1/responses`, what Codex uses). Only the fields read here are typed; every
 * other field passes through untouched.
 */
export type OpenAiApi = 'openai-chat' | 'openai-responses';

/**
 * OpenAI-shaped error reply: `{"error":{"message","type","param","code"}}`. A 4xx other than
 * 408, 409 and 429 (the ones OpenAI's SDKs retry) gets `x-should-retry: false`, as the
 * Anthropic-shaped ones do (errors.ts): a bad token, an unknown model or a bad body is answered
 * the same way however often it is sent.
 */
export function openaiError(status: number, type: string, message: string, code: string | null = null, param: string | null = null): Reply {
  const final = status >= 400 && status < 500 && status !== 408 && status !== 409 && status !== 429;
  return jsonReply(status, { error: { message, type, param, code } }, final ? { 'x-should-retry': 'false' } : {});
}

/** The budget refusal harnesses do not retry (Codex: 429 `insufficient_quota` → one request; harness-facts.md). */
export function openaiBudgetError(message: string): Reply {
  const res = openaiError(429, 'insufficient_quota', message, 'insufficient_quota');
  res.headers['x-should-retry'] = 'false';
  return res;
}

/**
 * The retryable refusal of a call that only calls in flight keep out of its budget (M2,
 * budget-wait.ts): 429 `rate_limit_exceeded` (type `requests`, as OpenAI's own rate limits),
 * `retry-after` (seconds) and `retry-after-ms`, and the delay in the message too ("Please try
 * again in Ns.", which Codex reads; `message` does not say it), and `x-should-retry: true` as
 * the Anthropic shape sends; never `insufficient_quota`.
 */
export function openaiRetryLater(message: string, retryAfterS: number): Reply {
  const res = openaiError(429, 'requests', `${message} Please try again in ${retryAfterS}s.`, 'rate_limit_exceeded');
  res.headers['x-should-retry'] = 'true';
  res.headers['retry-after'] = String(retryAfterS);
  res.headers['retry-after-ms'] = String(retryAfterS * 1000);
  return res;
}

export const ChatRequest = z
  .object({
    model: modelName(),
    messages: z.array(z.object({ role: z.string() }).passthrough()).min(1),
    // null (OpenAI's spec: boolean or null) is absent: not streamed; likewise include_usage
    stream: z.boolean().nullable().optional(),
    // at most the gateway's ceiling (request.ts MAX_OUTPUT_TOKENS_CEILING): past it a 400, not a
    // budget refusal; null (OpenAI accepts it) means absent, as for Responses max_output_tokens
    max_tokens: outputLimit().nullable().optional(),
    max_completion_tokens: outputLimit().nullable().optional(),
    /** Choices to generate (OpenAI: 1–128; null: absent, 1): each may use the whole output limit. */
    n: z.number().int().min(1).max(128).nullable().optional(),
    stream_options: z.object({ include_usage: z.boolean().nullable().optional() }).passthrough().nullable().optional(),
  })
  .passthrough();
export type ChatRequest = z.infer<typeof ChatRequest>;

export const ResponsesRequest = z
  .object({
    model: modelName(),
    input: z.union([z.string(), z.array(z.object({}).passthrough())]),
    instructions: z.string().nullable().optional(),
    stream: z.boolean().nullable().optional(),
    max_output_tokens: outputLimit().nullable().optional(),
    /** Refused when true ({@link BACKGROUND_REFUSED}). */
    background: z.boolean().nullable().optional(),
  })
  .passthrough();
export type ResponsesRequest = z.infer<typeof ResponsesRequest>;

const isJsonSpace = (b: number | undefined) => b === 0x20 || b === 0x09 || b === 0x0a || b === 0x0d;

/**
 * The Chat Completions body `raw` asking the upstream for a stream's usage
 * (`stream_options.include_usage: true`, issue 3). When the client sent no `stream_options`
 * the key is spliced in after the body's opening `{` (no work over a body that may be hundreds
 * of KB); otherwise that one member is edited in the text ({@link editJson}), the client's other
 * stream options kept. Every other byte goes through as sent either way.
 * @throws UneditableBodyError when that edit cannot be made faithfully (see there).
 */
export function withStreamUsage(raw: Uint8Array, chat: ChatRequest): Buffer {
  if (chat.stream_options === undefined) {
    let i = 0;
    while (isJsonSpace(raw[i])) i++;
    let j = i + 1;
    while (isJsonSpace(raw[j])) j++;
    // `{` then a first member (never `}`: model and messages are required)
    if (raw[i] === 0x7b && j < raw.length && raw[j] !== 0x7d) return Buffer.concat([raw.subarray(0, i + 1), STREAM_USAGE_MEMBER, raw.subarray(i + 1)]);
  }
  const options = chat.stream_options;
  return options !== null && typeof options === 'object' && !Array.isArray(options)
    ? editJson(raw, [[['stream_options', 'include_usage'], true]])
    : editJson(raw, [[['stream_options'], { include_usage: true }]]);
}

const STREAM_USAGE_MEMBER = Buffer.from('"stream_options":{"include_usage":true},');

/**
 * Why a Responses request with `background: true` is refused (400 invalid_request_error, param
 * `background`, before anything is reserved or sent upstream): the upstream answers such a call
 * at once with `status: "queued"` and `usage: null`, and bills the real generation later, when
 * the gateway no longer sees it (it would be charged an estimate, its reservation released,
 * and the generation itself never metered).
 */
export const BACKGROUND_REFUSED =
  'background responses cannot be metered: the gateway meters a call from its reply, and a background response is billed after the reply (status "queued", no usage); send the request without "background" (stream it for a long generation)';

/**
 * Why a Chat Completions request setting both `max_tokens` and `max_completion_tokens` is
 * refused (OpenAI's rule: one of them): the gateway reserves for and meters one output limit, and
 * an OpenAI-compatible server may honour the other one (it was under-billed at the smaller).
 */
export const BOTH_OUTPUT_LIMITS_REFUSED = 'max_tokens and max_completion_tokens: set only one of them (the gateway reserves for and meters one output limit, and an upstream may honour either)';

/**
 * Why a Responses request with a Chat Completions output limit (`max_tokens`,
 * `max_completion_tokens`) is refused: neither is a Responses field, and an upstream that honours
 * it would write past the `max_output_tokens` the gateway meters.
 */
export const responsesLimitRefused = (field: string) => `${field}: not a Responses field: use max_output_tokens (the output limit the gateway reserves for and meters)`;

/**
 * Parses a body of `api`; `{ error }` names the bad field (`messages: ...`) or says it is not
 * JSON, or that a field it reads is given twice (repeated-members.ts). Errors too: a Responses body with `background: true` ({@link BACKGROUND_REFUSED}), or
 * with `max_tokens`/`max_completion_tokens` ({@link responsesLimitRefused}); a Chat body with
 * both output limits ({@link BOTH_OUTPUT_LIMITS_REFUSED}); a body referring to state stored on
 * the provider (server-input.ts storedStateRef: `previous_response_id`, `conversation`,
 * `prompt`, `item_reference`, a `file_id`), whose input the gateway cannot bound.
 */
export function parseOpenAiRequest(api: OpenAiApi, raw: string): { request: ChatRequest | ResponsesRequest } | { error: string; param: string | null } {
  let json: unknown;
  try {
    json = JSON.parse(raw);
  } catch {
    return { error: notJsonMessage(raw), param: null };
  }
  const twice = repeatedMember(raw, WATCHED_MEMBERS[api]);
  if (twice !== null) return { error: givenTwice(twice), param: twice };
  const r = (api === 'openai-chat' ? ChatRequest : ResponsesRequest).safeParse(json);
  if (!r.success) {
    const issue = r.error.issues[0] ? wireIssue(r.error.issues[0]) : undefined;
    const param = issue?.path.join('.') || null;
    return { error: `${param ?? 'body'}: ${issue?.message ?? 'invalid'}`, param };
  }
  if (api === 'openai-responses' && (r.data as ResponsesRequest).background === true) return { error: `background: ${BACKGROUND_REFUSED}`, param: 'background' };
  const body = r.data as Record<string, unknown>;
  // a null limit is an absent one (max_tokens: null with max_completion_tokens: 5 is no conflict)
  if (api === 'openai-chat' && body.max_tokens != null && body.max_completion_tokens != null) return { error: BOTH_OUTPUT_LIMITS_REFUSED, param: 'max_completion_tokens' };
  if (api === 'openai-responses') {
    for (const field of ['max_tokens', 'max_completion_tokens']) if (body[field] !== undefined && body[field] !== null) return { error: responsesLimitRefused(field), param: field };
  }
  const stored = storedStateRef(r.data, api);
  if (stored !== null) return { error: stored.message, param: stored.param };
  return { request: r.data };
}

/** The output limit a request sets (max_tokens / max_completion_tokens / max_output_tokens), if any (a null one is none). */
export function maxOutputOf(api: OpenAiApi, req: ChatRequest | ResponsesRequest): number | undefined {
  if (api === 'openai-chat') {
    const c = req as ChatRequest;
    return c.max_completion_tokens ?? c.max_tokens ?? undefined;
  }
  return (req as ResponsesRequest).max_output_tokens ?? undefined;
}

/** The member that holds the output limit {@link maxOutputOf} read (Chat: `max_completion_tokens` when set, else `max_tokens`). */
export function limitFieldOf(api: OpenAiApi, req: ChatRequest | ResponsesRequest): 'max_output_tokens' | 'max_completion_tokens' | 'max_tokens' {
  if (api !== 'openai-chat') return 'max_output_tokens';
  return (req as ChatRequest).max_completion_tokens != null ? 'max_completion_tokens' : 'max_tokens';
}

/** Choices a request asks for (Chat Completions `n`, default 1 when absent or null; Responses: 1). Each may use the whole output limit. */
export function choicesOf(api: OpenAiApi, req: ChatRequest | ResponsesRequest): number {
  return api === 'openai-chat' ? ((req as ChatRequest).n ?? 1) : 1;
}

/**
 * The output-limit field the gateway sets when a request has none, so that the tokens it
 * reserved for are a bound the upstream keeps (issue 3: no tree spends past its budget):
 * Responses `max_output_tokens`; Chat Completions `max_completion_tokens` for OpenAI itself
 * (its o-series models refuse `max_tokens`), `max_tokens` for other OpenAI-compatible servers
 * (llama.cpp, Ollama and most gateways know only that one).
 */
export function outputLimitField(api: OpenAiApi, provider: string): 'max_output_tokens' | 'max_completion_tokens' | 'max_tokens' {
  if (api !== 'openai-chat') return 'max_output_tokens';
  return provider === 'openai' ? 'max_completion_tokens' : 'max_tokens';
}

const NULLABLE_LIMITS = ['max_tokens', 'max_completion_tokens', 'max_output_tokens'];

/**
 * The body `raw` with `field: tokens` added (a request that set no output limit), and `req`
 * (its parsed copy) given the same field. Spliced after the opening `{` when the body has no
 * such key; else the members edited in the text ({@link editJson}) when it has one
 * (`max_output_tokens: null`) or another output limit set to null (`max_tokens: null` when
 * `field` is `max_completion_tokens`: removed from both). Every other byte goes through as sent.
 * @throws UneditableBodyError when that edit cannot be made faithfully (see there).
 */
export function withOutputLimit(raw: Uint8Array, req: ChatRequest | ResponsesRequest, field: string, tokens: number): Buffer {
  const had = Object.hasOwn(req, field);
  const fields = req as Record<string, unknown>;
  fields[field] = tokens;
  // another limit sent as null (absent) is dropped, so no upstream sees two limit fields
  const removed: string[] = [];
  for (const other of NULLABLE_LIMITS) {
    if (other !== field && fields[other] === null && delete fields[other]) removed.push(other);
  }
  if (!had && removed.length === 0) {
    let i = 0;
    while (isJsonSpace(raw[i])) i++;
    if (raw[i] === 0x7b) return Buffer.concat([raw.subarray(0, i + 1), Buffer.from(`${JSON.stringify(field)}:${tokens},`), raw.subarray(i + 1)]);
  }
  return editJson(raw, [[[field], tokens], ...removed.map((k): [string[], undefined] => [[k], undefined])]);
}

function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) return content.map((p) => (p && typeof p === 'object' && typeof (p as { text?: unknown }).text === 'string' ? (p as { text: string }).text : '')).join('\n');
  return '';
}

const ASSISTANT_SIDE = new Set(['function_call', 'reasoning', 'custom_tool_call', 'local_shell_call']);

/**
 * The request as the scripted model sees it (a Messages request): one `assistant` message per
 * earlier model turn — Chat: each assistant message; Responses: each run of consecutive
 * assistant-side items (assistant messages, function_call, reasoning) — and the system text
 * (system/developer messages, `instructions`) so `{{workspace}}` can be filled.
 */
export function asScriptRequest(api: OpenAiApi, req: ChatRequest | ResponsesRequest): MessagesRequest {
  let turns = 0;
  const system: string[] = [];
  if (api === 'openai-chat') {
    for (const m of (req as ChatRequest).messages) {
      if (m.role === 'assistant') turns += 1;
      else if (m.role === 'system' || m.role === 'developer') system.push(textOf(m.content));
    }
  } else {
    const r = req as ResponsesRequest;
    if (r.instructions) system.push(r.instructions);
    let inRun = false;
    for (const item of typeof r.input === 'string' ? [] : r.input) {
      const it = item as { type?: string; role?: string; content?: unknown };
      const assistantSide = it.role === 'assistant' || (it.type !== undefined && ASSISTANT_SIDE.has(it.type));
      if (assistantSide && !inRun) turns += 1;
      inRun = assistantSide;
      if (it.role === 'system' || it.role === 'developer') system.push(textOf(it.content));
    }
  }
  const maxTokens = maxOutputOf(api, req);
  return {
    model: req.model,
    messages: Array.from({ length: turns }, () => ({ role: 'assistant', content: '' })),
    system: system.join('\n'),
    // the output limit (max_completion_tokens / max_tokens / max_output_tokens): scripted usage stops there
    ...(maxTokens !== undefined ? { max_tokens: maxTokens } : {}),
  };
}
