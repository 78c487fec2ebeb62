import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { brotliCompressSync, constants as zlibConstants, gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { upstreamRequest, UpstreamRequestRefusedError } from './upstream-http.js';

// A real HTTP server standing in for a provider; each path is one behaviour.
let server: Server;
let base = '';
const closed: string[] = [];
const seen: Array<{ path: string; headers: Record<string, unknown>; body: string }> = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      seen.push({ path: req.url ?? '', headers: req.headers, body });
      route((req.url ?? '').split('?')[0]!, res);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

function route(path: string, res: ServerResponse): void {
  if (path === '/json-gzip') {
    const body = gzipSync(Buffer.from('{"ok":true,"text":"é"}'));
    res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip', 'content-length': body.length, 'set-cookie': ['a=1', 'b=2'], 'x-multi': ['one', 'two'] });
    return void res.end(body);
  }
  if (path === '/json-stacked') {
    // brotli applied first, then gzip (content-encoding lists them in that order); a key the mask must see
    const body = gzipSync(brotliCompressSync(Buffer.from('{"error":"bad key sk-ant-secret-KEY1"}')));
    res.writeHead(400, { 'content-type': 'application/json', 'content-encoding': 'br, gzip', 'content-length': body.length });
    return void res.end(body);
  }
  if (path === '/sse-stacked') {
    res.writeHead(200, { 'content-type': 'text/event-stream', 'content-encoding': 'gzip, identity, gzip' });
    return void res.end(gzipSync(gzipSync(Buffer.from('event: ping\ndata: {}\n\n'))));
  }
  if (path === '/json-unknown') {
    res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip, zstd' });
    return void res.end('opaque');
  }
  if (path === '/sse-gzip') {
    res.writeHead(200, { 'content-type': 'text/event-stream', 'content-encoding': 'gzip' });
    return void res.end(gzipSync(Buffer.from('event: ping\ndata: {}\n\n')));
  }
  if (path === '/sse-gzip-cut') {
    // 150 events of ~1 KB, gzip flushed but never finished (no trailer), sent in 150 writes,
    // then the connection closes mid-body (a chunked body without its last chunk)
    const events = Array.from({ length: 150 }, (_, i) => `event: e\ndata: ${String(i).padStart(3, '0')}${'x'.repeat(1000)}\n\n`).join('');
    const body = gzipSync(Buffer.from(events), { finishFlush: zlibConstants.Z_SYNC_FLUSH });
    res.writeHead(200, { 'content-type': 'text/event-stream', 'content-encoding': 'gzip' });
    const step = Math.ceil(body.length / 150);
    for (let at = 0; at < body.length; at += step) res.write(body.subarray(at, at + step));
    return void res.socket?.end();
  }
  if (path === '/no-content') return void res.writeHead(204).end();
  if (path === '/slow-headers') return void setTimeout(() => res.writeHead(200).end('late'), 2_000);
  if (path === '/endless-sse') {
    // One event every 5 ms until the client goes away; records that it did.
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    const t = setInterval(() => res.write('event: ping\ndata: {}\n\n'), 5);
    res.on('close', () => {
      clearInterval(t);
      closed.push(path);
    });
    return;
  }
  res.writeHead(404).end();
}

async function readAll(s: AsyncIterable<Uint8Array>): Promise<string> {
  let out = '';
  for await (const c of s) out += Buffer.from(c).toString();
  return out;
}

describe('upstreamRequest (undici pool)', () => {
  it('a request undici will not send (an `expect` header) is refused before anything is sent: UpstreamRequestRefusedError, not retried, the server sees nothing', async () => {
    const before = seen.length;
    const err = await upstreamRequest(`${base}/json-gzip`, { method: 'POST', headers: { 'content-type': 'application/json', expect: '100-continue' }, body: Buffer.from('{}') }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UpstreamRequestRefusedError);
    expect(err).toMatchObject({ reason: 'expect header not supported', noRetry: true });
    await new Promise((r) => setTimeout(r, 50));
    expect(seen.length).toBe(before);
  });

  it('sends the body and headers, and decodes a gzip body; set-cookie is dropped and repeated headers joined', async () => {
    const r = await upstreamRequest(`${base}/json-gzip?x=1`, { method: 'POST', headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01' }, body: Buffer.from('{"a":1}') });
    expect(r.status).toBe(200);
    expect(r.body?.toString()).toBe('{"ok":true,"text":"é"}');
    expect(r.headers['content-encoding']).toBeUndefined();
    expect(r.headers['content-length']).toBeUndefined();
    expect(r.headers['set-cookie']).toBeUndefined();
    expect(r.headers['x-multi']).toBe('one, two');
    const got = seen.find((s) => s.path === '/json-gzip?x=1')!;
    expect(got.body).toBe('{"a":1}');
    expect(got.headers['anthropic-version']).toBe('2023-06-01');
    expect(got.headers['content-length']).toBe('7');
  });

  it('a stack of content-codings (br, gzip; gzip, identity, gzip) is undone layer by layer, whole bodies and streams; a stack with one it cannot undo passes with its bytes', async () => {
    // fresh-user finding: `gzip, gzip` passed undecoded, so the key mask could not read it
    const whole = await upstreamRequest(`${base}/json-stacked`, { method: 'POST', headers: {}, body: Buffer.from('{}') });
    expect([whole.status, whole.body?.toString(), whole.headers['content-encoding'], whole.headers['content-length']]).toEqual([400, '{"error":"bad key sk-ant-secret-KEY1"}', undefined, undefined]);
    const stream = await upstreamRequest(`${base}/sse-stacked`, { method: 'POST', headers: {}, body: Buffer.from('{}') });
    expect(await readAll(stream.stream!)).toBe('event: ping\ndata: {}\n\n');
    const unknown = await upstreamRequest(`${base}/json-unknown`, { method: 'POST', headers: {}, body: Buffer.from('{}') });
    expect([unknown.body?.toString(), unknown.headers['content-encoding']]).toEqual(['opaque', 'gzip, zstd']);
  });

  it('decodes a gzip event stream, handed over as a live stream', async () => {
    const r = await upstreamRequest(`${base}/sse-gzip`, { method: 'POST', headers: {}, body: Buffer.from('{}') });
    expect(r.body).toBeNull();
    expect(await readAll(r.stream!)).toBe('event: ping\ndata: {}\n\n');
  });

  it('a gzip event stream cut mid-way: a reader slower than the socket still gets every event that arrived, then the error', async () => {
    const r = await upstreamRequest(`${base}/sse-gzip-cut`, { method: 'POST', headers: {}, body: Buffer.from('{}') });
    let text = '';
    let failed: unknown = null;
    try {
      for await (const c of r.stream!) {
        text += Buffer.from(c).toString();
        await new Promise((res) => setTimeout(res, 5)); // slower than the upstream: chunks pile up
      }
    } catch (err) {
      failed = err;
    }
    expect(failed).not.toBeNull();
    const events = text.match(/data: (\d{3})/g) ?? [];
    expect(events.length).toBe(150);
    expect(events.at(-1)).toBe('data: 149');
  });

  it('a 204 has no body', async () => {
    expect(await upstreamRequest(`${base}/no-content`, { method: 'POST', headers: {}, body: Buffer.from('{}') })).toEqual({ status: 204, headers: expect.any(Object), body: null });
  });

  it('a reader that stops early ends the upstream call', async () => {
    const r = await upstreamRequest(`${base}/endless-sse`, { method: 'POST', headers: {}, body: Buffer.from('{}') });
    let n = 0;
    for await (const _ of r.stream!) if (++n === 3) break;
    await expect.poll(() => closed.includes('/endless-sse'), { timeout: 2_000 }).toBe(true);
  });

  it('an abort before the reply rejects with AbortError at once', async () => {
    const ac = new AbortController();
    const p = upstreamRequest(`${base}/slow-headers`, { method: 'POST', headers: {}, body: Buffer.from('{}'), signal: ac.signal });
    setTimeout(() => ac.abort(), 50);
    const t0 = Date.now();
    await expect(p).rejects.toMatchObject({ name: 'AbortError' });
    expect(Date.now() - t0).toBeLessThan(1_000);
    // the request was written whole: the provider may be working on it (no notSent)
    expect(((await p.catch((e: unknown) => e)) as { notSent?: boolean }).notSent).toBeUndefined();
  });

  it('a signal aborted before the request is sent: AbortError with notSent, and the upstream sees nothing', async () => {
    const ac = new AbortController();
    ac.abort();
    const before = seen.length;
    const err = (await upstreamRequest(`${base}/slow-headers`, { method: 'POST', headers: {}, body: Buffer.from('{}'), signal: ac.signal }).catch((e: unknown) => e)) as { name: string; notSent?: boolean };
    expect([err.name, err.notSent]).toEqual(['AbortError', true]);
    await new Promise((r) => setTimeout(r, 100));
    expect(seen.length).toBe(before);
  });

  it('an unreachable upstream rejects', async () => {
    const probe = createServer();
    await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
    const port = (probe.address() as AddressInfo).port;
    await new Promise<void>((r) => probe.close(() => r()));
    await expect(upstreamRequest(`http://127.0.0.1:${port}/v1/messages`, { method: 'POST', headers: {}, body: Buffer.from('{}') })).rejects.toThrow();
  });
});
