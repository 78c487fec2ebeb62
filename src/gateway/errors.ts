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
 * give up at once instead of retrying (harness-facts.md).
 */
export function anthropicError(status: number, type: AnthropicErrorType, message: string, opts: { retry?: boolean } = {}): Reply {
  return jsonReply(status, { type: 'error', error: { type, message } }, opts.retry === false ? { 'x-should-retry': 'false' } : {});
}
