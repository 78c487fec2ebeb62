import { anthropicError, type AnthropicErrorType } from './errors.js';
import { meteredReply, type CallContext } from './meter.js';
import { openaiError } from './openai-wire.js';
import { discardReply, type CallSignal, type Reply } from './reply.js';
import { BASE_URL_SETTING } from './upstream-redirect.js';

/**
 * Anthropic's error `type` for an HTTP status (its documented errors: 400 invalid_request_error,
 * 401 authentication_error, 402 billing_error, 403 permission_error, 404 not_found_error, 413
 * request_too_large, 429 rate_limit_error, 500 api_error, 529 overloaded_error); another 4xx is
 * invalid_request_error, another 5xx api_error.
 */
export function anthropicTypeOf(status: number): AnthropicErrorType {
  const known: Record<number, AnthropicErrorType> = {
    400: 'invalid_request_error',
    401: 'authentication_error',
    402: 'billing_error',
    403: 'permission_error',
    404: 'not_found_error',
    413: 'request_too_large',
    429: 'rate_limit_error',
    529: 'overloaded_error',
  };
  return known[status] ?? (status < 500 ? 'invalid_request_error' : 'api_error');
}

/** The headers of the upstream's error reply a client still gets: the retry advice (retry.ts set `x-should-retry` on the last attempt) and the request ids. */
const KEPT = ['x-should-retry', 'retry-after', 'retry-after-ms', 'request-id', 'x-request-id'];

/** Longest part of the upstream's text quoted in the message, characters. */
const SNIPPET_CHARS = 200;

/**
 * Maps an upstream error reply (status ≥ 400) whose body is not JSON — an HTML page or a line
 * of text from a proxy or load balancer in front of the provider, or no body — to the wire
 * format's own error with the same status; null for any other reply (the route passes it on as
 * usual). Anthropic and OpenAI send their errors as JSON (`{"type":"error","error":{...}}`,
 * `{"error":{...}}`), which SDKs and harnesses read; an HTML body reached the client as it came
 * (fresh-tester finding). The call is recorded as any upstream error is (meter.ts: the upstream
 * status, no tokens, $0); the message names the provider, the status, the content type and the
 * start of the text (tags dropped, at most {@link SNIPPET_CHARS} characters, cut between words), and for a 404 or
 * 405 the base-URL setting (a URL without its `/v1` answers so); the retry advice
 * headers are kept. OpenAI's shape: `type` `server_error` for a 5xx, else
 * `invalid_request_error`, code `upstream_not_json`.
 */
export async function upstreamNotJsonReply(res: Reply, ctx: CallContext, format: 'anthropic' | 'openai', signal?: CallSignal): Promise<Reply | null> {
  if (res.status < 400 || res.stream || isJson(res)) return null;
  await meteredReply(res, ctx, signal);
  await discardReply(res);
  const type = res.headers['content-type'] || 'no content type';
  const text = res.body ? snippet(res.body.toString('utf8')) : '';
  const what = text ? `${type}, not the JSON error its API sends: ${JSON.stringify(text)}` : `no body (${type}), not the JSON error its API sends`;
  // a 404/405 page is most often a base URL without its version path (`…/v1` left out)
  const setting = res.status === 404 || res.status === 405 ? BASE_URL_SETTING[ctx.provider] : undefined;
  const message = `the model provider (${ctx.provider}) answered HTTP ${res.status} with ${what} (a proxy or gateway in front of it?${setting ? ` or a wrong path: an admin should check ${setting}` : ''})`;
  const reply = format === 'anthropic' ? anthropicError(res.status, anthropicTypeOf(res.status), message) : openaiError(res.status, res.status >= 500 ? 'server_error' : 'invalid_request_error', message, 'upstream_not_json');
  for (const h of KEPT) if (res.headers[h] !== undefined) reply.headers[h] = res.headers[h];
  return reply;
}

/** True when the reply's body is JSON (by its content type, or, whatever that says, by parsing). */
function isJson(res: Reply): boolean {
  if (/^application\/(.+\+)?json\b/i.test(res.headers['content-type'] ?? '')) return true;
  if (!res.body || res.body.byteLength === 0 || res.body.byteLength > 1_000_000) return false;
  try {
    JSON.parse(res.body.toString('utf8'));
    return true;
  } catch {
    return false;
  }
}

/**
 * `text` with tags and runs of white space dropped, cut to at most {@link SNIPPET_CHARS}
 * characters at a space, never inside a word: the key mask (key-mask.ts, run on the whole reply
 * after this) knows only whole keys, so a key an upstream echoed and the cut split reached the
 * job as 23 of its 24 characters (fresh-tester finding). A word running past the limit is left
 * out whole; text of one such word is quoted as `…`.
 */
export function snippet(text: string): string {
  const plain = text
    .replace(/<(script|style)\b[\s\S]*?<\/\1>/gi, ' ')
    .replace(/<[^>]*>/g, ' ')
    .replace(/\s+/g, ' ')
    .trim();
  if (plain.length <= SNIPPET_CHARS) return plain;
  const cut = plain.lastIndexOf(' ', SNIPPET_CHARS);
  return cut > 0 ? `${plain.slice(0, cut)} …` : '…';
}
