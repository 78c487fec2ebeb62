import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { request } from 'node:http';
import { MAX_API_BODY_BYTES } from './app.js';
import { startTestServer, type TestServer } from './test-helpers.js';

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

  it('refuses a huge unauthenticated registration before reading it', async () => {
    // The server answers from Content-Length and closes; the client's write may then fail
    // with EPIPE, so read the status the raw way and ignore the write error.
    const status = await new Promise<number>((resolve, reject) => {
      const body = Buffer.alloc(5 * 1024 * 1024, 'x');
      const req = request(`${t.url}/api/runners/register`, { method: 'POST', headers: { 'content-type': 'application/json', 'content-length': body.length } }, (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      req.on('error', (e: NodeJS.ErrnoException) => (e.code === 'EPIPE' || e.code === 'ECONNRESET' ? undefined : reject(e)));
      req.end(body);
    });
    expect(status).toBe(413);
  });
});

describe('heartbeat settings', () => {
  it('refuses a timeout shorter than two heartbeat intervals', async () => {
    await expect(startTestServer({ heartbeatIntervalMs: 30_000, heartbeatTimeoutMs: 1000 })).rejects.toThrow(
      'heartbeat timeout (1000 ms) must be at least twice the heartbeat interval (30000 ms)',
    );
  });
});
