import { upstreamFetch } from '../upstream-http.js';
/**
 * The `anthropic` provider: forwards a Messages request to the Anthropic API (or any
 * ANTHROPIC_BASE_URL) with the server's key, body bytes untouched, and hands back the
 * upstream's response with its body still streaming (never buffered here).
 */

/** Hop-by-hop headers (RFC 9110 §7.6.1) plus ones that must not cross the proxy. */
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
  'host',
  'content-length',
  // the job token arrives in one of these; the upstream gets the server's key instead
  'x-api-key',
  'authorization',
  'cookie',
  // let the upstream pick; fetch decodes whatever it sends
  'accept-encoding',
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
  // fetch has already decoded the body, so these no longer describe it
  'content-encoding',
  'content-length',
  'set-cookie',
]);

/** Copies `h` without hop-by-hop headers, the ones in `drop`, and any the Connection header lists. */
export function filtered(h: Headers, drop: Set<string>): Headers {
  const listed = new Set((h.get('connection') ?? '').split(',').map((s) => s.trim().toLowerCase()).filter(Boolean));
  const out = new Headers();
  h.forEach((value, name) => {
    const n = name.toLowerCase();
    if (!drop.has(n) && !listed.has(n)) out.set(n, value);
  });
  return out;
}

/** What {@link forwardToAnthropic} needs. */
export interface ForwardRequest {
  /** Upstream origin, e.g. https://api.anthropic.com (no trailing slash). */
  baseUrl: string;
  /** The server's upstream API key (sent as x-api-key). */
  apiKey: string;
  /** Path and query of the incoming request, e.g. `/v1/messages?beta=true`. */
  pathAndQuery: string;
  method: string;
  /** The incoming request's headers (anthropic-version, anthropic-beta, ... are passed on). */
  headers: Headers;
  /** The incoming body, byte for byte. */
  body: Uint8Array<ArrayBuffer>;
  /** Aborts the upstream request (e.g. the client went away). */
  signal?: AbortSignal;
}

/**
 * Sends the request upstream and returns its response: status and headers (minus hop-by-hop
 * and encoding headers) with the body as a live stream. SSE replies get `Cache-Control:
 * no-cache` and `X-Accel-Buffering: no` so no proxy in between buffers them.
 * @throws the fetch error when the upstream cannot be reached (DNS, refused, reset before headers).
 */
export async function forwardToAnthropic(req: ForwardRequest): Promise<Response> {
  const headers = filtered(req.headers, DROP_REQUEST);
  headers.set('x-api-key', req.apiKey);
  const upstream = await upstreamFetch(req.baseUrl + req.pathAndQuery, {
    method: req.method,
    headers,
    ...(req.method === 'GET' || req.method === 'HEAD' ? {} : { body: req.body }),
    ...(req.signal ? { signal: req.signal } : {}),
  });
  const out = filtered(upstream.headers, DROP_RESPONSE);
  if ((out.get('content-type') ?? '').startsWith('text/event-stream')) {
    out.set('cache-control', 'no-cache');
    out.set('x-accel-buffering', 'no');
  }
  return new Response(upstream.body, { status: upstream.status, statusText: upstream.statusText, headers: out });
}
