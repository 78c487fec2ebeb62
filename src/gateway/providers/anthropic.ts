import type { IncomingHttpHeaders } from 'node:http';
import { upstreamRequest, type UpstreamInit } from '../upstream-http.js';
import { toResponse } from '../web-adapter.js';
import type { CallSignal, Reply } from '../reply.js';
/**
 * The `anthropic` provider: forwards a Messages request to the Anthropic API (or any
 * ANTHROPIC_BASE_URL) with the server's key, body bytes untouched, and hands back the
 * upstream's response with its body still streaming (never buffered here).
 */

/** What no call forwards: hop-by-hop headers (RFC 9110 §7.6.1) plus ones that must not cross the proxy. */
export const DROP_REQUEST = new Set([
  'connection',
  'keep-alive',
  'proxy-authenticate',
  'proxy-authorization',
  'proxy-connection',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  // `Expect: 100-continue` (curl sends it for bodies over 1 MB) is met hop by hop (RFC 9110
  // §10.1.1): node:http answered 100 Continue and the whole body is read before the call goes
  // upstream. undici refuses the header before sending anything (the client got 502).
  'expect',
  'host',
  'content-length',
  // the job token arrives in one of these; the upstream gets the server's key instead
  'x-api-key',
  'authorization',
  'cookie',
  // let the upstream pick; fetch decodes whatever it sends
  'accept-encoding',
  // which organization or project of the server's key is billed (OpenAI-Organization,
  // OpenAI-Project: platform.openai.com/docs/api-reference/authentication): the key is the
  // server's, so the admin's choice of account holds, not the job's (fresh-user finding) — on
  // every route: an ANTHROPIC_BASE_URL may be a company gateway that reads them (tester finding)
  'openai-organization',
  'openai-project',
]);

export const DROP_RESPONSE = new Set([
  'connection',
  'keep-alive',
  'proxy-authenticate',
  'proxy-connection',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  // the body may be another length (decoded; a stream is chunked); a content-encoding the
  // gateway decoded is gone already (upstream-http.ts), one it could not (zstd) stays with its bytes
  'content-length',
  'set-cookie',
  // which account the server's key belongs to (Anthropic's anthropic-organization-id, OpenAI's
  // openai-organization and openai-project reply headers): the key and its account are the
  // server's; a job has no use for them (tester finding: they reached every job)
  'anthropic-organization-id',
  'openai-organization',
  'openai-project',
]);

/**
 * Copies `h` (node-style, lower-case names) without hop-by-hop headers, the ones in `drop`, and
 * any the Connection header lists; repeated values are joined by `, `.
 */
export function filtered(h: IncomingHttpHeaders | Record<string, string>, drop: Set<string>): Record<string, string> {
  // Request side: the job token (x-api-key or Bearer) never goes upstream, in whatever other
  // header a client also put it (issue 3; a fresh user's `x-echo: <token>` reached the provider).
  const token = drop.has('x-api-key') ? jobTokenIn(h) : null;
  const conn = h['connection'];
  // Usually nothing or `keep-alive` (dropped anyway): no set to build for it on every call.
  const listed = conn === undefined || (conn === 'keep-alive' && drop.has('keep-alive')) ? null : new Set((Array.isArray(conn) ? conn.join(',') : conn).split(',').map((s) => s.trim().toLowerCase()).filter(Boolean));
  const out: Record<string, string> = {};
  for (const name in h) {
    const v = h[name];
    if (v === undefined) continue;
    const n = name.toLowerCase();
    if (drop.has(n) || listed?.has(n)) continue;
    const text = Array.isArray(v) ? v.join(', ') : v;
    if (token !== null && text.includes(token)) continue;
    out[n] = text;
  }
  return out;
}

/** The job token a request carries (x-api-key, else `Authorization: Bearer`), or null; short values (under 16 characters) are not treated as one. */
function jobTokenIn(h: IncomingHttpHeaders | Record<string, string>): string | null {
  const key = h['x-api-key'];
  const auth = h['authorization'];
  const t = typeof key === 'string' && key.trim() ? key.trim() : typeof auth === 'string' ? /^Bearer\s+(\S+)\s*$/i.exec(auth)?.[1] : undefined;
  return t !== undefined && t.length >= 16 ? t : null;
}

/**
 * Sets `content-type: application/json` in `headers` (an upstream request's, from
 * {@link filtered}) unless the client's is a JSON type already (`application/json`, `…/…+json`,
 * parameters kept as sent). The gateway forwards only bodies it read as JSON; a client's
 * `text/plain` (fetch's default for a string body) or curl's `application/x-www-form-urlencoded`
 * would otherwise reach an upstream that may refuse it (fresh-user finding).
 */
export function asJsonBody(headers: Record<string, string>): void {
  const type = headers['content-type'];
  if (type === undefined || !JSON_TYPE.test(type)) headers['content-type'] = 'application/json';
}
const JSON_TYPE = /^\s*[a-z0-9!#$&^_.+-]+\/(?:[a-z0-9!#$&^_.+-]+\+)?json\s*(?:;|$)/i;

/** The upstream reply without hop-by-hop headers; SSE gets `cache-control: no-cache` and `x-accel-buffering: no`. */
export function proxiedReply(upstream: Reply): Reply {
  const out = filtered(upstream.headers, DROP_RESPONSE);
  if ((out['content-type'] ?? '').startsWith('text/event-stream')) {
    out['cache-control'] = 'no-cache';
    out['x-accel-buffering'] = 'no';
  }
  const reply: Reply = { status: upstream.status, headers: out, body: upstream.body };
  if (upstream.stream) reply.stream = upstream.stream;
  return reply;
}

/** What {@link forwardAnthropic} needs. */
export interface ForwardRequest {
  /** Upstream origin, e.g. https://api.anthropic.com (no trailing slash). */
  baseUrl: string;
  /** ONE of the server's upstream keys (a KeyRing's `take()`, never the comma-separated setting), sent as x-api-key. */
  apiKey: string;
  /** Path and query of the incoming request, e.g. `/v1/messages?beta=true`. */
  pathAndQuery: string;
  method: string;
  /** The incoming request's headers (anthropic-version, anthropic-beta, ... are passed on). */
  headers: IncomingHttpHeaders | Headers;
  /** The incoming body, byte for byte. */
  body: Uint8Array;
  /** Aborts the upstream request (e.g. the client went away). */
  signal?: CallSignal;
}

/**
 * Sends the request upstream and returns its reply: status and headers (minus hop-by-hop and
 * encoding headers) with the body whole, or for SSE as a live stream (see {@link proxiedReply}).
 * @throws the connection error when the upstream cannot be reached (DNS, refused, reset before headers).
 */
export async function forwardAnthropic(req: ForwardRequest): Promise<Reply> {
  const incoming = req.headers instanceof Headers ? Object.fromEntries(req.headers) : req.headers;
  const headers = filtered(incoming, DROP_REQUEST);
  headers['x-api-key'] = req.apiKey;
  if (req.method !== 'GET' && req.method !== 'HEAD') asJsonBody(headers);
  // fields set one by one, not spread in (each spread is a copy on every call)
  const init: UpstreamInit = { method: req.method, headers };
  if (req.method !== 'GET' && req.method !== 'HEAD') init.body = req.body;
  if (req.signal) init.signal = req.signal;
  return proxiedReply(await upstreamRequest(req.baseUrl + req.pathAndQuery, init));
}

/** {@link forwardAnthropic} as a web `Response` (for callers outside the gateway's node path). */
export async function forwardToAnthropic(req: ForwardRequest): Promise<Response> {
  return toResponse(await forwardAnthropic(req));
}
