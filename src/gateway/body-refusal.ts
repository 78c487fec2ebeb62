import type { DecodedBody } from './body-encoding.js';
import { wireError, type AnthropicErrorType } from './errors.js';
import type { GatewayRequest, Reply } from './reply.js';

/**
 * Why a request's body could not be turned into the JSON its route reads (a `content-encoding`
 * it cannot undo, body-encoding.ts), worked out by the adapter that read it (node-adapter.ts,
 * web-adapter.ts) and answered by the route once it knows the call's job, so the refusal is
 * recorded in the ledger like any other (issue: such calls went unrecorded).
 */
export interface BodyRefusal {
  /** 400 (not valid data of its encoding), 413 (decodes past the size limit) or 415 (an encoding not decoded). */
  status: 400 | 413 | 415;
  /** The ledger's `refused` reason: `bad_encoding` (400), `too_large` (413), `unsupported_encoding` (415). */
  reason: 'bad_encoding' | 'too_large' | 'unsupported_encoding';
  /** The Anthropic error type of the reply. */
  anthropicType: AnthropicErrorType;
  /** The OpenAI error `code` of the reply. */
  openaiCode: string;
  /** What the client is told: names the encoding and what is wrong. */
  message: string;
}

/** A {@link GatewayRequest} whose body an adapter could not decode: `body` is empty, `bodyBytes` the bytes received. */
export interface RefusedBodyRequest extends GatewayRequest {
  bodyRefusal?: BodyRefusal;
}

/**
 * The refusal for a body sent with `content-encoding` `enc` that {@link DecodedBody} `d` could
 * not decode (`limit`: the body size limit, bytes), or null when `d` holds the decoded body.
 */
export function bodyRefusalFor(d: DecodedBody, enc: string | string[], limit: number): BodyRefusal | null {
  if ('body' in d) return null;
  const name = JSON.stringify(Array.isArray(enc) ? enc.join(', ') : enc);
  if ('tooLarge' in d) return { status: 413, reason: 'too_large', anthropicType: 'request_too_large', openaiCode: 'request_too_large', message: `request body (content-encoding ${name}) decodes to more than ${limit} bytes; the limit is ${limit}` };
  if ('unsupported' in d) return { status: 415, reason: 'unsupported_encoding', anthropicType: 'invalid_request_error', openaiCode: 'unsupported_content_encoding', message: `content-encoding ${JSON.stringify(d.unsupported)} is not supported: send the body uncompressed, or encoded as gzip, deflate or br` };
  return { status: 400, reason: 'bad_encoding', anthropicType: 'invalid_request_error', openaiCode: 'invalid_content_encoding', message: `request body is not valid ${JSON.stringify(d.corrupt)} data (content-encoding ${name})` };
}

/** The refusal an adapter attached to `req`, if any. */
export function bodyRefusalOf(req: GatewayRequest): BodyRefusal | undefined {
  return (req as RefusedBodyRequest).bodyRefusal;
}

/** The reply to a request to `path` refused for its body: the route's wire format ({@link wireError}), `x-should-retry: false`. */
export function bodyRefusalReply(path: string, r: BodyRefusal): Reply {
  return wireError(path, r.status, r.anthropicType, r.openaiCode, r.message);
}

/**
 * The 413 message of a request body over `limit` bytes: its size (`request body is 40000000
 * bytes; the limit is 33554432`), or for one refused before its end (`bodyCut`, a chunked
 * upload) what had arrived: `request body is more than 33554432 bytes (33619968 had arrived);
 * the limit is 33554432`.
 */
export function bodyTooLargeMessage(req: Pick<GatewayRequest, 'bodyBytes' | 'bodyCut'>, limit: number): string {
  return req.bodyCut ? `request body is more than ${limit} bytes (${req.bodyBytes} had arrived); the limit is ${limit}` : `request body is ${req.bodyBytes} bytes; the limit is ${limit}`;
}
