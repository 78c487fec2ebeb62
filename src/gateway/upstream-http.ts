import http from 'node:http';
import https from 'node:https';
import type { Readable } from 'node:stream';
import { createBrotliDecompress, createGunzip, createInflate } from 'node:zlib';
import type { Reply } from './reply.js';

/**
 * Upstream calls over node:http(s) with keep-alive agents. Node 20's built-in fetch (undici)
 * measured ~10× slower per request here (bench/gateway.bench.js), and the gateway's whole point
 * is to add almost nothing. No web streams: the reply's body is a Buffer, or for
 * `text/event-stream` the live node stream (gzip/deflate/br decoded, so `content-encoding` and
 * `content-length` are dropped when decoded). `signal` aborts the request (and the body).
 * Redirects are not followed.
 */
const agents = {
  http: new http.Agent({ keepAlive: true, maxSockets: 512, keepAliveMsecs: 10_000 }),
  https: new https.Agent({ keepAlive: true, maxSockets: 512, keepAliveMsecs: 10_000 }),
};

/** What {@link upstreamRequest} sends. Header names lower case. */
export interface UpstreamInit {
  method: string;
  headers: Record<string, string>;
  body?: Uint8Array;
  signal?: AbortSignal;
}

/**
 * Sends one request upstream.
 * @returns the reply (headers lower case, repeated ones joined by `, `; `set-cookie` dropped):
 *   `body` read whole unless the reply is `text/event-stream`, then `stream` (node Readable).
 * @throws when the upstream cannot be reached, resets before the reply is read whole, or
 *   `signal` aborted (an `AbortError`).
 */
export function upstreamRequest(url: string, init: UpstreamInit): Promise<Reply> {
  const u = new URL(url);
  const mod = u.protocol === 'https:' ? https : http;
  const headers: Record<string, string> = { ...init.headers, 'accept-encoding': 'gzip, deflate, br' };
  if (init.body) headers['content-length'] = String(init.body.byteLength);
  return new Promise((resolve, reject) => {
    if (init.signal?.aborted) return reject(new DOMException('aborted', 'AbortError'));
    const req = mod.request(
      { protocol: u.protocol, hostname: u.hostname, port: u.port || undefined, path: u.pathname + u.search, method: init.method, headers, agent: u.protocol === 'https:' ? agents.https : agents.http },
      (res) => {
        const out: Record<string, string> = {};
        for (const [k, v] of Object.entries(res.headers)) {
          if (v === undefined || k === 'set-cookie') continue;
          out[k] = Array.isArray(v) ? v.join(', ') : v;
        }
        const enc = (res.headers['content-encoding'] ?? '').toLowerCase();
        let stream: Readable = res;
        if (enc === 'gzip' || enc === 'x-gzip') stream = res.pipe(createGunzip());
        else if (enc === 'deflate') stream = res.pipe(createInflate());
        else if (enc === 'br') stream = res.pipe(createBrotliDecompress());
        if (stream !== res) {
          delete out['content-encoding'];
          delete out['content-length'];
          res.on('error', (e) => stream.destroy(e));
          res.on('aborted', () => stream.destroy(new Error('upstream response aborted')));
          stream.on('close', () => res.destroy());
        }
        const status = res.statusCode ?? 502;
        if (status === 204 || status === 304 || init.method === 'HEAD') {
          res.resume();
          return resolve({ status, headers: out, body: null });
        }
        const type = (res.headers['content-type'] ?? '').toLowerCase();
        if (!type.startsWith('text/event-stream')) {
          const chunks: Buffer[] = [];
          stream.on('data', (c: Buffer) => chunks.push(c));
          stream.on('error', reject);
          res.on('aborted', () => reject(new Error('upstream response aborted')));
          stream.on('end', () => resolve({ status, headers: out, body: chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks) }));
          return;
        }
        resolve({ status, headers: out, body: null, stream });
      },
    );
    const onAbort = () => req.destroy(new DOMException('aborted', 'AbortError'));
    init.signal?.addEventListener('abort', onAbort, { once: true });
    req.on('close', () => init.signal?.removeEventListener('abort', onAbort));
    req.on('error', reject);
    req.end(init.body ? Buffer.from(init.body.buffer, init.body.byteOffset, init.body.byteLength) : undefined);
  });
}
