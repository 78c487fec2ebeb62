import http from 'node:http';
import https from 'node:https';
import { Readable } from 'node:stream';
import { createBrotliDecompress, createGunzip, createInflate } from 'node:zlib';

/**
 * A minimal `fetch` for upstream calls over node:http(s) with keep-alive agents. Node 20's
 * built-in fetch (undici) measured ~10× slower per request here (bench/gateway.bench.js), and
 * the gateway's whole point is to add almost nothing. Same contract as fetch for what the
 * providers use: status, headers, the body as a live web stream (gzip/deflate/br decoded, so
 * `content-encoding` no longer applies), `signal` aborts the request (and the body), and it
 * rejects when the upstream cannot be reached. Redirects are not followed.
 */
const agents = {
  http: new http.Agent({ keepAlive: true, maxSockets: 512, keepAliveMsecs: 10_000 }),
  https: new https.Agent({ keepAlive: true, maxSockets: 512, keepAliveMsecs: 10_000 }),
};

export interface UpstreamInit {
  method: string;
  headers: Headers;
  body?: Uint8Array;
  signal?: AbortSignal;
}

export function upstreamFetch(url: string, init: UpstreamInit): Promise<Response> {
  const u = new URL(url);
  const mod = u.protocol === 'https:' ? https : http;
  const headers: Record<string, string> = {};
  init.headers.forEach((v, k) => (headers[k] = v));
  headers['accept-encoding'] = 'gzip, deflate, br';
  if (init.body) headers['content-length'] = String(init.body.byteLength);
  return new Promise((resolve, reject) => {
    if (init.signal?.aborted) return reject(new DOMException('aborted', 'AbortError'));
    const req = mod.request(
      { protocol: u.protocol, hostname: u.hostname, port: u.port || undefined, path: u.pathname + u.search, method: init.method, headers, agent: u.protocol === 'https:' ? agents.https : agents.http },
      (res) => {
        const out = new Headers();
        for (const [k, v] of Object.entries(res.headers)) {
          if (v === undefined) continue;
          if (Array.isArray(v)) v.forEach((x) => out.append(k, x));
          else out.set(k, v);
        }
        const enc = (res.headers['content-encoding'] ?? '').toLowerCase();
        let stream: Readable = res;
        if (enc === 'gzip' || enc === 'x-gzip') stream = res.pipe(createGunzip());
        else if (enc === 'deflate') stream = res.pipe(createInflate());
        else if (enc === 'br') stream = res.pipe(createBrotliDecompress());
        if (stream !== res) {
          out.delete('content-encoding');
          out.delete('content-length');
          res.on('error', (e) => stream.destroy(e));
        }
        const status = res.statusCode ?? 502;
        const nullBody = status === 204 || status === 304 || init.method === 'HEAD';
        if (nullBody) res.resume();
        const body = nullBody ? null : (Readable.toWeb(stream) as ReadableStream<Uint8Array>);
        resolve(new Response(body, { status, statusText: res.statusMessage ?? '', headers: out }));
      },
    );
    const onAbort = () => req.destroy(new DOMException('aborted', 'AbortError'));
    init.signal?.addEventListener('abort', onAbort, { once: true });
    req.on('close', () => init.signal?.removeEventListener('abort', onAbort));
    req.on('error', reject);
    req.end(init.body ? Buffer.from(init.body.buffer, init.body.byteOffset, init.body.byteLength) : undefined);
  });
}
