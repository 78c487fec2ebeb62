import type { IncomingHttpHeaders } from 'node:http';
import { decodeBody, decodedHeaders, encodingsOf } from './body-encoding.js';
import { bodyRefusalFor, type RefusedBodyRequest } from './body-refusal.js';
import type { GatewayRequest, Reply } from './reply.js';
import { withoutTokenParams } from './query-tokens.js';

/**
 * The gateway through web `fetch` types, for tests and embedders (`createGateway().fetch`); the
 * control plane serves `/v1/*` with node-adapter.ts instead, which skips these conversions.
 */

/**
 * A reply as a web Response. A streamed reply's body pulls from the stream; when the reader
 * cancels, `onCancel` runs (the caller aborts the upstream) and the stream is closed.
 */
export function toResponse(r: Reply, onCancel?: () => void): Response {
  const headers = new Headers(r.headers);
  headers.delete('content-length');
  if (!r.stream) return new Response(r.body && r.body.byteLength > 0 ? new Uint8Array(r.body.buffer, r.body.byteOffset, r.body.byteLength) as Uint8Array<ArrayBuffer> : null, { status: r.status, headers });
  const it = r.stream[Symbol.asyncIterator]();
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const n = await it.next();
        if (n.done) controller.close();
        else controller.enqueue(n.value);
      } catch (err) {
        try {
          controller.error(err);
        } catch {
          /* already cancelled */
        }
      }
    },
    async cancel() {
      onCancel?.();
      await it.return?.().catch(() => undefined);
    },
  });
  return new Response(body, { status: r.status, headers });
}

/**
 * A web Request as a {@link GatewayRequest}: body read whole (kept up to `limit` bytes, counted
 * in full) and, when sent with a `content-encoding` and within `limit`, decoded as the node
 * adapter does ({@link decodeBody}; the decoded body goes on without `content-encoding`); one
 * that cannot be decoded goes on empty with its `bodyRefusal` (body-refusal.ts) for the route to
 * answer and record. The returned `signal` follows the request's and can also be aborted by `abort()`.
 */
export async function fromRequest(req: Request, limit: number): Promise<{ request: GatewayRequest; abort: () => void }> {
  const ac = new AbortController();
  if (req.signal.aborted) ac.abort();
  else req.signal.addEventListener('abort', () => ac.abort(), { once: true });
  const url = new URL(req.url);
  const headers: IncomingHttpHeaders = {};
  req.headers.forEach((v, k) => (headers[k] = v));
  const all = Buffer.from(await req.arrayBuffer());
  const body = all.byteLength > limit ? all.subarray(0, limit) : all;
  const request: RefusedBodyRequest = { method: req.method, path: url.pathname, pathAndQuery: withoutTokenParams(url.pathname + url.search), headers, body, bodyBytes: all.byteLength, signal: ac.signal };
  const enc = headers['content-encoding'];
  const encodings = all.byteLength > limit ? [] : encodingsOf(enc);
  if (enc !== undefined && encodings.length > 0) {
    const d = await decodeBody(encodings, body, limit);
    const refusal = bodyRefusalFor(d, enc, limit);
    if (refusal) {
      request.bodyRefusal = refusal;
      request.body = Buffer.alloc(0);
    } else if ('body' in d) {
      request.headers = decodedHeaders(headers);
      request.body = d.body;
      request.bodyBytes = d.body.byteLength;
    }
  }
  return { request, abort: () => ac.abort() };
}
