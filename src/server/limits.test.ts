import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Agent, request } from 'node:http';
import { MAX_API_BODY_BYTES } from './app.js';
import { startTestServer, type TestServer } from './test-helpers.js';
import { rawRequest } from '../gateway/test-upstream.js';

/** A JSON body of exactly `bytes` bytes: {"agent":"test-fixer","input":{"repo":"xxxx..."}} */
function bodyOf(bytes: number): string {
  const head = '{"agent":"test-fixer","input":{"repo":"';
  const tail = '"}}';
  return head + 'x'.repeat(bytes - head.length - tail.length) + tail;
}

describe('API body size limit', () => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer();
  });
  afterAll(() => t.close());

  it('refuses a body one byte over 1 MiB with 413 and stores no job', async () => {
    expect(MAX_API_BODY_BYTES).toBe(1_048_576);
    const over = bodyOf(MAX_API_BODY_BYTES + 1);
    expect(Buffer.byteLength(over)).toBe(1_048_577);
    const res = await t.api('/api/jobs', { method: 'POST', body: over, headers: { 'content-type': 'application/json' } });
    expect(res.status).toBe(413);
    expect(await res.json()).toEqual({ error: { code: 'payload_too_large', message: 'request body is larger than 1048576 bytes' } });
    expect(await t.store.listJobs({ limit: 10 })).toEqual([]);
  });

  it('accepts a body of exactly 1 MiB (it reaches validation)', async () => {
    const res = await t.api('/api/jobs', { method: 'POST', body: bodyOf(MAX_API_BODY_BYTES), headers: { 'content-type': 'application/json' } });
    expect(res.status).toBe(201);
  });

  it('a body refused before it is read gets its 413, not a reset: declared or chunked, keep-alive or Connection: close (a fresh tester: EPIPE instead of the 413)', async () => {
    // 16 MiB: past what the loopback socket buffers hold, so a close with the body unread resets
    // the connection while the client still writes (the test accepted EPIPE here before)
    const body = Buffer.alloc(16 * 1024 * 1024, 'x');
    const post = (path: string, chunked: boolean, agent: Agent | false) =>
      new Promise<string>((resolve) => {
        const headers: Record<string, string> = { 'content-type': 'application/json', ...(chunked ? {} : { 'content-length': String(body.length) }) };
        // the reply and how the upload ended: a write that failed after the reply came counts too
        let reply = 'no reply';
        let failed = '';
        const req = request(`${t.url}${path}`, { method: 'POST', agent, headers }, (res) => {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (c: string) => (text += c));
          res.on('end', () => (reply = `${res.statusCode} ${(JSON.parse(text) as { error: { code: string } }).error.code}`));
        });
        req.on('error', (e: NodeJS.ErrnoException) => (failed = ` (upload: ${e.code})`));
        req.on('close', () => setImmediate(() => resolve(reply + failed)));
        if (!chunked) return void req.end(body);
        for (let i = 0; i < 256; i++) req.write(body.subarray(i * 65_536, (i + 1) * 65_536));
        req.end();
      });
    const keepAlive = new Agent({ keepAlive: true });
    const got: string[] = [];
    for (const path of ['/api/runners/register', '/api/jobs', '/hooks/github/nope'])
      for (const chunked of [false, true]) for (const agent of [false, keepAlive] as const) got.push(`${path} ${chunked ? 'chunked' : 'declared'} ${agent ? 'keep-alive' : 'close'}: ${await post(path, chunked, agent)}`);
    keepAlive.destroy();
    expect(got).toEqual(got.map((g) => g.replace(/: .*$/, ': 413 payload_too_large')));
  });

  describe('a body refused before it is read: the connection closes within 5 s (core/linger.ts)', () => {
    it('a keep-alive upload of a declared 1 GB trickling in: the 413 at once, the close by ~5 s (node read it to its end: a fresh tester held one open for minutes)', async () => {
      const r = await rawRequest(t.url, 'POST /api/jobs HTTP/1.1', [`authorization: Bearer ${t.admin}`, 'content-type: application/json', 'content-length: 1000000000'], (write, done) => {
        const tick = setInterval(() => (done() ? clearInterval(tick) : write(Buffer.alloc(1024, 'x'))), 100);
      });
      expect(r.text).toMatch(/^HTTP\/1\.1 413 [^\r]*\r\n/);
      expect(r.text.toLowerCase()).toContain('connection: close');
      expect(r.firstMs).toBeLessThan(1_000);
      expect(r.closedMs).toBeGreaterThanOrEqual(4_500);
      expect(r.closedMs).toBeLessThan(8_000);
    }, 20_000);

    it('Expect: 100-continue with a body declared over the limit (API, webhook): the 413 at once, no 100 Continue first, the close at once', async () => {
      for (const [path, bytes] of [['/api/jobs', 2 * 1024 * 1024], ['/hooks/github/nope', 6 * 1024 * 1024]] as const) {
        const r = await rawRequest(t.url, `POST ${path} HTTP/1.1`, [`authorization: Bearer ${t.admin}`, 'content-type: application/json', `content-length: ${bytes}`, 'expect: 100-continue'], () => undefined);
        expect(r.text, path).toMatch(/^HTTP\/1\.1 413 /);
        expect(r.text).not.toContain('100 Continue');
        expect(r.closedMs, path).toBeLessThan(2_000);
      }
      // within the limit: the 100 as before
      const ok = await rawRequest(t.url, 'POST /api/jobs HTTP/1.1', [`authorization: Bearer ${t.admin}`, 'content-type: application/json', 'content-length: 2', 'expect: 100-continue', 'connection: close'], (write) => {
        setTimeout(() => write('{}'), 200);
      });
      expect(ok.text).toMatch(/^HTTP\/1\.1 100 Continue\r\n\r\nHTTP\/1\.1 400 /);
    });
  });
});

describe('heartbeat settings', () => {
  it('refuses a timeout shorter than two heartbeat intervals', async () => {
    await expect(startTestServer({ heartbeatIntervalMs: 30_000, heartbeatTimeoutMs: 1000 })).rejects.toThrow(
      'heartbeat timeout (1000 ms) must be at least twice the heartbeat interval (30000 ms)',
    );
  });
});
