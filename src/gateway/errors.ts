import { openaiError } from './openai-wire.js';
import { jsonReply, type Reply } from './reply.js';

/**
 * Anthropic-shaped error replies, so harnesses treat them like the real API's:
 * `{"type":"error","error":{"type":<type>,"message":<message>}}`.
 */
export type AnthropicErrorType =
  | 'invalid_request_error'
  | 'authentication_error'
  | 'billing_error'
  | 'permission_error'
  | 'not_found_error'
  | 'request_too_large'
  | 'rate_limit_error'
  | 'api_error'
  | 'overloaded_error';

/**
 * A JSON error reply. `retry: false` adds `x-should-retry: false`, which makes Claude Code
 * give up at once instead of retrying (harness-facts.md); `retry: true` adds
 * `x-should-retry: true` (the Anthropic SDK then retries whatever the status). `retryAfterS`
 * adds `retry-after` (seconds: the least delay before Claude Code's next try).
 */
export function anthropicError(status: number, type: AnthropicErrorType, message: string, opts: { retry?: boolean; retryAfterS?: number } = {}): Reply {
  const headers: Record<string, string> = opts.retry === undefined ? {} : { 'x-should-retry': String(opts.retry) };
  if (opts.retryAfterS !== undefined) headers['retry-after'] = String(opts.retryAfterS);
  return jsonReply(status, { type: 'error', error: { type, message } }, headers);
}

/** The environment setting that gives each upstream provider its key (or URL). */
const PROVIDER_SETTING: Record<string, string> = {
  anthropic: 'ANTHROPIC_API_KEY (several keys: comma-separated)',
  openai: 'OPENAI_API_KEY (several keys: comma-separated; OPENAI_BASE_URL for another endpoint)',
  'openai-compatible': 'FLOTILLA_OPENAI_COMPATIBLE_URL (and FLOTILLA_OPENAI_COMPATIBLE_KEY if it needs a key)',
};

/** The environment setting that gives `provider` its key (or URL), as {@link providerNotConfiguredMessage} names it; "its key" for a provider not listed. */
export function providerSetting(provider: string): string {
  return PROVIDER_SETTING[provider] ?? 'its key';
}

/**
 * The message of the refusal for a model whose provider has no key (or URL) on this server:
 * names the model, the provider and the setting to add. Every wire format answers it without
 * calling the upstream, in a form harnesses do not retry (a retry cannot fix configuration).
 */
export function providerNotConfiguredMessage(model: string, provider: string): string {
  return `model ${JSON.stringify(model)} maps to provider ${provider}, which is not configured on this server: set ${providerSetting(provider)} in the server's environment and restart it, or route the model to another provider (flotilla models)`;
}

/**
 * The 400 of a model whose route names a provider of the other wire format: which format that
 * provider speaks and the endpoints that take it, how to route the model to a provider of the
 * format called instead (a harness cannot switch endpoints: Claude Code only calls
 * /v1/messages), and, when that provider is not configured either, its setting (fresh-tester
 * finding: a Claude model routed to an OpenAI provider without a key was told only to call
 * /v1/chat/completions, which would have failed too).
 */
export function wrongFormatMessage(model: string, provider: string, calledFormat: 'anthropic' | 'openai', configured: boolean): string {
  const m = JSON.stringify(model);
  const speaks = calledFormat === 'anthropic' ? 'the OpenAI formats: call /v1/chat/completions or /v1/responses' : 'the Messages format: call /v1/messages';
  const instead = calledFormat === 'anthropic' ? 'anthropic' : 'openai';
  const missing = configured ? '' : `; provider ${provider} is not configured on this server either: set ${providerSetting(provider)}`;
  return `model ${m} is served by provider ${provider}, which speaks ${speaks}, or route the model to a provider of this format (flotilla models set ${model} ${instead})${missing}`;
}

/**
 * True for a path of the OpenAI wire formats (`/v1/chat/...`, `/v1/responses...`,
 * `/v1/completions`, `/v1/embeddings`): what the gateway answers there itself (no such
 * endpoint, an internal error) is in OpenAI's error shape; elsewhere in Anthropic's.
 */
export function openAiPath(path: string): boolean {
  return path.startsWith('/v1/chat/') || path.startsWith('/v1/responses') || path === '/v1/completions' || path === '/v1/embeddings';
}

/**
 * The gateway's own failure serving `path` (a bug: logged where it happened, not sent): 500 in
 * the path's wire format ({@link openAiPath}), retryable as a provider's 500 is.
 */
export function internalError(path: string): Reply {
  const message = 'internal error in the gateway';
  return openAiPath(path) ? openaiError(500, 'server_error', message) : anthropicError(500, 'api_error', message);
}

/**
 * The gateway is stopping (its server is shutting down): 503 in the path's wire format
 * ({@link openAiPath}), retryable (`x-should-retry: true`, `retry-after` 5 s): the harness tries
 * again, against the server once it is back, on a new connection (`connection: close`).
 * Nothing is reserved or recorded.
 */
export function shuttingDown(path: string): Reply {
  const message = 'the gateway is shutting down: try again shortly';
  const reply = openAiPath(path) ? openaiError(503, 'server_error', message) : anthropicError(503, 'api_error', message, { retry: true });
  reply.headers['x-should-retry'] = 'true';
  reply.headers['retry-after'] = '5';
  // this connection ends with the server: the retry comes on a new one (it said keep-alive: tester finding)
  reply.headers['connection'] = 'close';
  return reply;
}

/**
 * No such endpoint (`method` `path`): 404, `x-should-retry: false`, in the wire format of the
 * client asking: Anthropic's for `/v1/messages*` and `/v1/complete`, OpenAI's for an OpenAI path
 * ({@link openAiPath}); for any other (`/v1/models`, `/v1/batches`, `/v1/files`: both providers
 * have one) Anthropic's when the request carries `anthropic-version` (its SDKs send it on every
 * request), else OpenAI's — a Bearer-only `GET /v1/models` got Anthropic's (fresh-tester
 * finding). A path with a doubled slash or capitals (`//v1/messages`: a base URL ending in `/`)
 * gets a hint.
 */
export function noSuchEndpoint(method: string, path: string, headers: Record<string, string | string[] | undefined> = {}): Reply {
  // `//v1/…`, `/v1//messages` (a base URL ending in `/`), `/V1/…`, `/v1%2fmessages`, `/v1/messages/`: the path meant, and a hint
  const lower = path.replace(/%2f/gi, '/').replace(/\/{2,}/g, '/').replace(/(.)\/$/, '$1').toLowerCase();
  const hint = lower !== path ? ' (paths have single slashes, no trailing or encoded ones, and are lower case: check the client\'s base URL)' : '';
  const message = `no such endpoint: ${method} ${path}${hint}`;
  const anthropic = lower.startsWith('/v1/messages') || lower === '/v1/complete' || (!openAiPath(lower) && headers['anthropic-version'] !== undefined);
  return anthropic ? anthropicError(404, 'not_found_error', message, { retry: false }) : openaiError(404, 'invalid_request_error', message);
}

/**
 * A request to a model-call endpoint (`path`, served for POST only) with another method (GET,
 * HEAD, PUT, ...): 405 with `Allow: POST` (RFC 9110 §15.5.6: a 405 must list the methods the
 * resource takes), in the path's wire format (Anthropic's `invalid_request_error` for
 * `/v1/messages*`, else OpenAI's), `x-should-retry: false`, naming the method and the one it
 * takes (a fresh tester's GET got "no such endpoint", as if the path were wrong).
 */
export function methodNotAllowed(method: string, path: string): Reply {
  const message = `${method} ${path}: this endpoint takes POST (a model call sends its request body with POST)`;
  const reply = path.startsWith('/v1/messages') ? anthropicError(405, 'invalid_request_error', message, { retry: false }) : openaiError(405, 'invalid_request_error', message, 'method_not_allowed');
  return { ...reply, headers: { ...reply.headers, allow: 'POST' } };
}

/**
 * A refusal for a request to `path` that any route gives the same way (body-refusal.ts: a body
 * the adapter could not decode), in that route's wire format: Anthropic's shape (`type` =
 * `anthropicType`) for `/v1/messages*`, else OpenAI's (`type` `invalid_request_error`, `code` =
 * `openaiCode`). Both with `x-should-retry: false` (`status` is a 4xx): the same request gets the same answer.
 */
export function wireError(path: string, status: number, anthropicType: AnthropicErrorType, openaiCode: string | null, message: string): Reply {
  if (path.startsWith('/v1/messages')) return anthropicError(status, anthropicType, message, { retry: false });
  // a 4xx: openaiError adds x-should-retry: false
  return openaiError(status, 'invalid_request_error', message, openaiCode);
}
