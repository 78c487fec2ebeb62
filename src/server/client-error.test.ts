/**
 * Requests node's HTTP parser refuses (client-error.ts), sent as raw bytes to a real server: the
 * answer names the problem in a JSON body both wire formats' clients read, the connection closes,
 * and the server goes on serving.
 */
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './test-helpers.js';
import { hashToken } from '../core/tokens.js';

/** Writes `bytes` on a fresh connection and reads until the server closes it. */
function raw(url: string, bytes: string): Promise<string> {
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const s = net.connect(Number(u.port), u.hostname, () => s.write(bytes));
    let got = '';
    s.setEncoding('latin1');
    s.on('data', (d: string) => (got += d));
    s.on('end', () => resolve(got));
    s.on('error', reject);
    s.setTimeout(10_000, () => reject(new Error(`no close; got ${JSON.stringify(got)}`)));
  });
}

/** Status, headers (lower-case names) and the parsed JSON body of a whole HTTP/1.1 reply. */
function parse(reply: string): { status: number; headers: Record<string, string>; body: { type: string; error: { type: string; message: string; code: string } } } {
  const end = reply.indexOf('\r\n\r\n');
  const [statusLine, ...lines] = reply.slice(0, end).split('\r\n');
  const headers = Object.fromEntries(lines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]));
  const body = reply.slice(end + 4);
  expect(Buffer.byteLength(body, 'latin1')).toBe(Number(headers['content-length']));
  return { status: Number(statusLine!.split(' ')[1]), headers, body: JSON.parse(body) };
}

/** A running job on `t`'s store whose job token is `token` (a model call with it reaches the gateway). */
async function runningJob(t: TestServer, token: string, credential: string): Promise<number> {
  const now = Date.now();
  const runner = await t.store.createRunner({ name: `r-${credential}`, labels: {}, capacity: 1, credentialHash: credential.repeat(64), now });
  const job = await t.store.createJob({ parentId: null, agent: 'test-fixer', agentVersion: '1', input: {}, selector: {}, priority: 0, budgetMicros: 1_000_000, now });
  await t.store.claimJob({ id: runner.id, labels: {} }, hashToken(token), now);
  await t.store.transitionJob(job.id, 1, ['assigned'], 'running', now, { startedAt: now });
  return job.id;
}

describe('requests the HTTP parser refuses', () => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer();
  });
  afterAll(async () => {
    await t.close();
  });

  it('headers over 16 KiB: 431 naming the limit, in both error shapes; the connection closes', async () => {
    const reply = parse(await raw(t.url, `POST /v1/messages HTTP/1.1\r\nhost: x\r\nx-api-key: flj_x\r\nx-big: ${'a'.repeat(20_000)}\r\ncontent-length: 2\r\n\r\n{}`));
    expect(reply.status).toBe(431);
    expect(reply.headers['content-type']).toBe('application/json');
    expect(reply.headers.connection).toBe('close');
    // Anthropic's shape (type + error.type/message) and OpenAI's (error.message/type/code)
    expect(reply.body).toEqual({ type: 'error', error: { type: 'invalid_request_error', message: "the request's headers are over 16384 bytes, this server's limit", param: null, code: 'request_header_fields_too_large' } });
  });

  it('a header value with a control character: 400 naming what the parser found', async () => {
    const reply = parse(await raw(t.url, 'POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\nx-bad: a\x01b\r\ncontent-length: 2\r\n\r\n{}'));
    expect(reply.status).toBe(400);
    expect(reply.body.error).toMatchObject({ type: 'invalid_request_error', code: 'malformed_http_request', message: 'the request is not valid HTTP/1.1: Invalid header value char' });
  });

  it('pipelined: a good request and then a bad one on one connection get both replies, in order (fresh-user finding: the first reply was lost)', async () => {
    const job = (await (await t.api('/api/jobs', { json: { agent: 'test-fixer', input: { repo: 'x' }, labels: { pool: 'nobody' } } })).json()) as { id: number };
    const good = `GET /api/jobs/${job.id} HTTP/1.1\r\nhost: x\r\nauthorization: Bearer ${t.admin}\r\n\r\n`;
    const got = await raw(t.url, `${good}GET / HTTP/1.1\r\nx-bad: \x01\r\n\r\n`);
    const second = got.indexOf('HTTP/1.1 400 ');
    expect(got.startsWith('HTTP/1.1 200 '), got.slice(0, 200)).toBe(true);
    expect(got.slice(0, second)).toContain(`"id":${job.id},`);
    expect(parse(got.slice(second)).body.error.code).toBe('malformed_http_request');
  });

  it('no Host header (HTTP/1.1 and 1.0): 400 naming it in the same JSON shape, not node\'s bare 400', async () => {
    for (const version of ['1.1', '1.0']) {
      const reply = parse(await raw(t.url, `POST /v1/messages HTTP/${version}\r\ncontent-length: 2\r\n\r\n{}`));
      expect(reply.status, version).toBe(400);
      expect(reply.body.error, version).toEqual({ type: 'invalid_request_error', message: 'the request has no Host header (HTTP/1.1 requires one)', param: null, code: 'missing_host_header' });
    }
  });

  it('a request line that is not HTTP: 400; a connection reset mid-head is only closed; the server still answers', async () => {
    const reply = parse(await raw(t.url, 'HELLO THERE\r\n\r\n'));
    expect(reply.status).toBe(400);
    expect(reply.body.error.message).toMatch(/^the request is not valid HTTP\/1\.1: \S/);
    const u = new URL(t.url);
    await new Promise<void>((resolve) => {
      const s = net.connect(Number(u.port), u.hostname, () => {
        s.write('POST /v1/messages HTTP/1.1\r\nhost: x\r\nx-part');
        s.resetAndDestroy();
        resolve();
      });
    });
    const res = await t.api('/api/jobs');
    expect(res.status).toBe(200);
  });

  it('a request whose body stalls after its headers (a valid job token): 408 naming it once the request timeout passes, and the connection closes', async () => {
    const slow = await startTestServer({ requestTimeoutMs: 600 });
    try {
      const token = 'flj_stalled_body_0123456789abcdefghij';
      await runningJob(slow, token, 'c');
      const t0 = Date.now();
      const reply = parse(await raw(slow.url, `POST /v1/messages HTTP/1.1\r\nhost: x\r\nx-api-key: ${token}\r\ncontent-type: application/json\r\ncontent-length: 500\r\n\r\n{"model":`));
      expect(reply.status).toBe(408);
      expect(reply.headers.connection).toBe('close');
      expect(reply.body.error).toMatchObject({ code: 'request_timeout', message: 'the request did not arrive whole in time' });
      expect(Date.now() - t0).toBeGreaterThanOrEqual(600);
      // the server goes on serving
      expect((await slow.api('/api/jobs')).status).toBe(200);
    } finally {
      await slow.close();
    }
  });
  it('a body whose chunked framing breaks while its handler reads it (a valid job token; an API route): 400 at once naming it, not a 408 minutes later (fresh tester)', async () => {
    const token = 'flj_broken_chunks_0123456789abcdefgh';
    const job = { id: await runningJob(t, token, 'd') };
    const requests = [
      `POST /v1/messages HTTP/1.1\r\nhost: x\r\nx-api-key: ${token}\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\nZZZ\r\nabc\r\n0\r\n\r\n`,
      `POST /api/jobs/${job.id}/budget HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n5\r\n{"add\r\nQQ\r\n`,
    ];
    for (const bytes of requests) {
      const t0 = Date.now();
      const reply = parse(await raw(t.url, bytes));
      expect(reply.status).toBe(400);
      expect(reply.headers.connection).toBe('close');
      expect(reply.body.error).toMatchObject({ type: 'invalid_request_error', code: 'malformed_http_request', message: 'the request is not valid HTTP/1.1: Invalid character in chunk size' });
      expect(Date.now() - t0).toBeLessThan(5_000);
    }
    // nothing was reserved or recorded for the gateway call: its body never arrived
    expect((await t.store.getJob(job.id))!.status).toBe('running');
    expect((await t.api('/api/jobs')).status).toBe(200);
  });
  it('an absolute-form target (RFC 9112 §3.2.2) is served as its path: a model call reaches the gateway, an API call the API', async () => {
    // no token: the gateway's own 401 in Anthropic's shape, not the API's 404 "no route"
    const call = await raw(t.url, 'POST http://evil.example/v1/messages HTTP/1.1\r\nhost: x\r\nconnection: close\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n{}');
    expect(call.split('\r\n')[0]).toBe('HTTP/1.1 401 Unauthorized');
    expect(JSON.parse(call.slice(call.indexOf('\r\n\r\n') + 4))).toMatchObject({ type: 'error', error: { type: 'authentication_error' } });
    const health = await raw(t.url, 'GET HTTP://other.example:99999/healthz HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n');
    expect(health.split('\r\n')[0]).toBe('HTTP/1.1 200 OK');
    // the path as sent: a `..` segment is not resolved, as it is not in origin form (the API refuses it in both)
    for (const target of ['http://x/../api/jobs', '/../api/jobs']) {
      const dots = await raw(t.url, `GET ${target} HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n`);
      expect(dots.split('\r\n')[0], target).not.toBe('HTTP/1.1 200 OK');
    }
  });
});
