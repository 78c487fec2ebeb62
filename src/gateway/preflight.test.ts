/**
 * The node adapter checks the job token and the declared body size BEFORE reading a body
 * (node-adapter.ts with call-auth.ts): an unauthenticated caller that declares tens of MB gets
 * its 401 at once, in the route's wire format, without the gateway waiting for (or keeping) the
 * rest; an oversize `content-length` with a good token gets 413 at once, recorded as refused.
 * Also: OpenAI-format 401/404 replies carry `x-should-retry: false`; bad-token log lines are
 * throttled and never hold the token. Real HTTP in front (raw sockets), a real fake upstream behind.
 */
import { request } from 'node:http';
import { beforeEach, describe, expect, it } from 'vitest';
import type { Logger } from '../core/log.js';
import { forFile, startGateway, type GatewayStart } from './test-server.js';
import { rawPost, rawRequest } from './test-upstream.js';

const TOKEN = 'flj_preflight_0123456789abcdefghij';
const BAD = 'flj_preflight_not_a_live_token_xyz';
const LIMIT = 64 * 1024;
const lines: Array<{ level: string; msg: string; fields: Record<string, unknown> }> = [];
const log: Logger = {
  debug: () => undefined,
  info: () => undefined,
  warn: (msg, fields = {}) => void lines.push({ level: 'warn', msg, fields }),
  error: (msg, fields = {}) => void lines.push({ level: 'error', msg, fields }),
  child: () => log,
};
/** The gateway's set-up (Anthropic and an OpenAI-compatible upstream, both the fake one; over plain node:http), logging to `log`. */
const setUp: GatewayStart = {
  upstream: () => ({ body: '{"id":"x","object":"chat.completion","model":"gpt-4o","choices":[],"usage":{"prompt_tokens":1,"completion_tokens":1}}' }),
  job: { token: TOKEN, id: 5, budgetMicros: 5_000_000 },
  openai: 'openai-compatible',
  config: { maxRequestBytes: LIMIT },
  log,
};
const gw = forFile(() => startGateway(setUp));
beforeEach(() => {
  lines.length = 0;
});

const json = { 'content-type': 'application/json' };
const HUGE = String(31_000_000);
const part = 'x'.repeat(16 * 1024);

describe('before the body is read', () => {
  it('an unknown token declaring 31 MB and sending 16 KB: 401 authentication_error at once (no wait for the rest), connection closed, nothing recorded', async () => {
    const t0 = Date.now();
    const r = await rawPost(gw.url, '/v1/messages', { ...json, 'x-api-key': BAD, 'content-length': HUGE }, part);
    expect(Date.now() - t0).toBeLessThan(2000);
    expect(r.status).toBe(401);
    expect(r.headers['x-should-retry']).toBe('false');
    expect(r.headers['connection']).toBe('close');
    expect(JSON.parse(r.body)).toEqual({ type: 'error', error: { type: 'authentication_error', message: 'invalid job token: unknown, or its job is no longer running' } });
    expect(gw.store.calls).toHaveLength(0);
    expect(gw.up.seen).toHaveLength(0);
  });

  it('no token at all, 31 MB declared: 401 at once', async () => {
    const r = await rawPost(gw.url, '/v1/messages', { ...json, 'content-length': HUGE }, part);
    expect(r.status).toBe(401);
    expect(JSON.parse(r.body).error.message).toBe('missing job token: send it as x-api-key or Authorization: Bearer');
  });

  it('no job token on an OpenAI route: both headers named; an Authorization header of another scheme, or an empty Bearer, said so (never its credential)', async () => {
    const cases: Array<[Record<string, string>, string]> = [
      [{}, 'missing job token: send it as Authorization: Bearer or x-api-key'],
      [{ authorization: 'Basic dXNlcjpzZWNyZXQ=' }, 'missing job token: send it as Authorization: Bearer or x-api-key; the Authorization header uses the Basic scheme, not Bearer'],
      [{ authorization: 'Bearer ' }, 'missing job token: send it as Authorization: Bearer or x-api-key; the Authorization header has an empty Bearer credential'],
      // a lone word may be the credential itself: not quoted
      [{ authorization: 'flj_notaschemejustatoken' }, 'missing job token: send it as Authorization: Bearer or x-api-key; the Authorization header is not "Bearer <token>"'],
      [{ authorization: 'lettersonlysecret' }, 'missing job token: send it as Authorization: Bearer or x-api-key; the Authorization header is not "Bearer <token>"'],
    ];
    for (const [headers, message] of cases) {
      for (const path of ['/v1/chat/completions', '/v1/responses']) {
        const r = await rawPost(gw.url, path, { ...json, ...headers, 'content-length': '2' }, '{}');
        expect([r.status, JSON.parse(r.body).error.message], `${path} ${JSON.stringify(headers)}`).toEqual([401, message]);
      }
    }
  });

  it('two different tokens (x-api-key and Bearer): 401 on every route, naming the two headers and neither token; the same token in both is served (fresh tester: charged to one of the two jobs)', async () => {
    const two = { 'x-api-key': TOKEN, authorization: `Bearer ${BAD}` };
    const want = {
      anthropic: 'two different credentials: x-api-key and Authorization: Bearer carry different tokens; send the job token as x-api-key or Authorization: Bearer, or the same token in both',
      openai: 'two different credentials: x-api-key and Authorization: Bearer carry different tokens; send the job token as Authorization: Bearer or x-api-key, or the same token in both',
    };
    for (const [path, format] of [['/v1/messages', 'anthropic'], ['/v1/messages/count_tokens', 'anthropic'], ['/v1/chat/completions', 'openai'], ['/v1/responses', 'openai']] as const) {
      const r = await rawPost(gw.url, path, { ...json, ...two, 'content-length': '2' }, '{}');
      expect([r.status, JSON.parse(r.body).error.message], path).toEqual([401, want[format]]);
      expect(r.body).not.toContain(TOKEN);
      expect(r.body).not.toContain(BAD);
    }
    expect(gw.store.calls).toHaveLength(0);
    expect(gw.up.seen).toHaveLength(0);
    const body = JSON.stringify({ model: 'gpt-4o', messages: [{ role: 'user', content: 'x' }] });
    const same = await rawPost(gw.url, '/v1/chat/completions', { ...json, 'x-api-key': TOKEN, authorization: `Bearer ${TOKEN}`, 'content-length': String(body.length) }, body);
    expect(same.status).toBe(200);
  });

  it('OpenAI routes: the 401 in OpenAI shape (invalid_api_key) with x-should-retry: false, at once', async () => {
    for (const path of ['/v1/chat/completions', '/v1/responses']) {
      const r = await rawPost(gw.url, path, { ...json, authorization: `Bearer ${BAD}`, 'content-length': HUGE }, part);
      expect(r.status).toBe(401);
      expect(r.headers['x-should-retry']).toBe('false');
      expect(JSON.parse(r.body)).toEqual({ error: { message: 'invalid job token: unknown, or its job is no longer running', type: 'invalid_request_error', param: null, code: 'invalid_api_key' } });
    }
    expect(gw.up.seen).toHaveLength(0);
  });

  it('a good token with a content-length over the limit: 413 at once, naming the size and the limit, recorded as refused, upstream untouched', async () => {
    const r = await rawPost(gw.url, '/v1/messages', { ...json, 'x-api-key': TOKEN, 'content-length': HUGE }, part);
    expect(r.status).toBe(413);
    expect(r.headers['x-should-retry']).toBe('false');
    expect(JSON.parse(r.body).error).toEqual({ type: 'request_too_large', message: `request body is 31000000 bytes; the limit is ${LIMIT}` });
    expect(gw.store.calls.map((c) => [c.jobId, c.httpStatus, c.refused])).toEqual([[5, 413, 'too_large']]);
    const o = await rawPost(gw.url, '/v1/chat/completions', { ...json, authorization: `Bearer ${TOKEN}`, 'content-length': HUGE }, part);
    expect(o.status).toBe(413);
    expect(JSON.parse(o.body).error.code).toBe('request_too_large');
    expect(gw.up.seen).toHaveLength(0);
  });

  it('a client sending its whole oversize body gets the reply, not a reset: the connection closes once the body is in (a fresh tester: EPIPE instead of the 413)', async () => {
    // 16 MiB: well past what the loopback socket buffers hold, so a server closing with the
    // body unread resets the connection while the client still writes
    const body = Buffer.alloc(16 * 1024 * 1024, 'x');
    for (const [token, path, status] of [[TOKEN, '/v1/messages', 413], [TOKEN, '/v1/chat/completions', 413], [BAD, '/v1/messages', 401]] as const) {
      const got = await new Promise<{ status: number; body: string; closed: boolean }>((resolve, reject) => {
        const req = request(`${gw.url}${path}`, { method: 'POST', agent: false, headers: { ...json, 'content-length': String(body.byteLength), 'x-api-key': token, authorization: `Bearer ${token}` } }, (res) => {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (c: string) => (text += c));
          res.on('end', () => req.socket?.once('close', () => resolve({ status: res.statusCode!, body: text, closed: true })));
        });
        req.on('error', reject);
        req.end(body);
      });
      expect([path, got.status, got.closed], `${path} ${token === BAD ? 'bad token' : ''}`).toEqual([path, status, true]);
      expect(got.body).toContain(status === 413 ? 'request body is 16777216 bytes' : 'invalid job token');
    }
  });

  it('a chunked body past the limit: the 413 once the limit is passed, not at the body\'s end; the rest dropped, the close by ~5 s (it read a 600 MiB upload to its end: a fresh tester)', async () => {
    let sent = 0;
    const r = await rawRequest(gw.url, 'POST /v1/messages HTTP/1.1', ['content-type: application/json', `x-api-key: ${TOKEN}`, 'transfer-encoding: chunked'], (write, done) => {
      const chunk = Buffer.alloc(16 * 1024, 'x');
      const tick = setInterval(() => {
        if (done()) return clearInterval(tick);
        sent += chunk.byteLength;
        write(`${chunk.byteLength.toString(16)}\r\n`);
        write(chunk);
        write('\r\n');
      }, 20);
    });
    expect(r.text).toMatch(/^HTTP\/1\.1 413 /);
    const body = JSON.parse(r.text.slice(r.text.indexOf('\r\n\r\n') + 4)) as { error: { type: string; message: string } };
    expect(body.error.type).toBe('request_too_large');
    expect(body.error.message).toMatch(new RegExp(`^request body is more than ${LIMIT} bytes \\((\\d+) had arrived\\); the limit is ${LIMIT}$`));
    // answered within a few chunks of the limit (16 KiB every 20 ms: the limit is 4 chunks)
    expect(r.firstMs).toBeLessThan(1_500);
    expect(r.closedMs).toBeGreaterThanOrEqual(4_500);
    expect(r.closedMs).toBeLessThan(8_000);
    expect(sent).toBeGreaterThan(LIMIT);
    expect(gw.up.seen).toHaveLength(0);
    expect(gw.store.calls.map((c) => [c.httpStatus, c.refused])).toEqual([[413, 'too_large']]);
  }, 20_000);

  it('a POST to no model route declaring 31 MB: 404 at once', async () => {
    const r = await rawPost(gw.url, '/v1/complete', { ...json, 'x-api-key': TOKEN, 'content-length': HUGE }, part);
    expect(r.status).toBe(404);
    expect(JSON.parse(r.body).error.message).toBe('no such endpoint: POST /v1/complete');
  });

  it('a good token and a body within the limit still goes through, the body whole upstream', async () => {
    const body = JSON.stringify({ model: 'gpt-4o', max_tokens: 10, messages: [{ role: 'user', content: 'y'.repeat(20_000) }] });
    const res = await fetch(gw.url + '/v1/chat/completions', { method: 'POST', headers: { ...json, authorization: `Bearer ${TOKEN}` }, body });
    expect(res.status).toBe(200);
    expect(gw.up.seen).toHaveLength(1);
    expect(JSON.parse(gw.up.seen[0]!.body)).toEqual(JSON.parse(body));
  });
});

describe('OpenAI-format refusals are final', () => {
  it('401 (bad token) and 404 (unknown model) carry x-should-retry: false', async () => {
    const bad = await fetch(gw.url + '/v1/chat/completions', { method: 'POST', headers: { ...json, authorization: `Bearer ${BAD}` }, body: '{}' });
    expect(bad.status).toBe(401);
    expect(bad.headers.get('x-should-retry')).toBe('false');
    const missing = await fetch(gw.url + '/v1/responses', { method: 'POST', headers: json, body: '{}' });
    expect(missing.status).toBe(401);
    expect(missing.headers.get('x-should-retry')).toBe('false');
    const unknown = await fetch(gw.url + '/v1/chat/completions', { method: 'POST', headers: { ...json, authorization: `Bearer ${TOKEN}` }, body: JSON.stringify({ model: 'mystery-1', messages: [{ role: 'user', content: 'x' }] }) });
    expect(unknown.status).toBe(404);
    expect(unknown.headers.get('x-should-retry')).toBe('false');
    expect(((await unknown.json()) as { error: { code: string } }).error.code).toBe('model_not_found');
    expect(gw.up.seen).toHaveLength(0);
  });
});

describe('bad-token log lines', () => {
  it('forty bad-token calls (two routes, unknown and missing tokens) write one line per kind, never the token', async () => {
    // a fresh gateway (same set-up): its throttle has seen nothing yet
    const own = await startGateway(setUp);
    try {
      for (let i = 0; i < 10; i++) {
        await fetch(own.url + '/v1/messages', { method: 'POST', headers: { ...json, 'x-api-key': BAD }, body: '{}' });
        await fetch(own.url + '/v1/chat/completions', { method: 'POST', headers: { ...json, authorization: `Bearer ${BAD}` }, body: '{}' });
        await fetch(own.url + '/v1/messages', { method: 'POST', headers: json, body: '{}' });
        expect((await fetch(own.url + '/v1/responses', { method: 'POST', headers: json, body: '{}' })).status).toBe(401);
      }
    } finally {
      await own.close();
    }
    expect(lines.map((l) => [l.msg, l.fields])).toEqual([
      ['gateway: rejected an unknown or expired job token', { path: '/v1/messages' }],
      ['gateway: rejected a call without a job token', { path: '/v1/messages' }],
    ]);
    expect(JSON.stringify(lines)).not.toContain(BAD);
  });
});
