import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gzipSync } from 'node:zlib';
import { afterEach, describe, expect, it } from 'vitest';
import { createGateway } from '../gateway.js';
import { MemoryGatewayStore } from '../memory-store.js';
import { loadPriceTable } from '../prices.js';
import { listen, type TestServer } from '../test-server.js';
import { forwardToAnthropic } from './anthropic.js';

const JOB_TOKEN = 'flj_jobtoken_abcdefghijklmnop';
const SERVER_KEY = 'sk-ant-server-key-123456';

const ev = (type: string, data: object) => `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;
const HEAD_EVENTS =
  ev('message_start', { message: { id: 'msg_1', type: 'message', role: 'assistant', model: 'claude-haiku-4-5-20251001', content: [], usage: { input_tokens: 100, cache_read_input_tokens: 2000, cache_creation_input_tokens: 0, output_tokens: 1 } } }) +
  ev('content_block_start', { index: 0, content_block: { type: 'text', text: '' } }) +
  ev('content_block_delta', { index: 0, delta: { type: 'text_delta', text: 'Hello there, this is a streamed answer.' } });
const TAIL_EVENTS = ev('content_block_stop', { index: 0 }) + ev('message_delta', { delta: { stop_reason: 'end_turn' }, usage: { output_tokens: 40 } }) + ev('message_stop', {});

interface Seen {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  body: Buffer;
}

/** A fake Anthropic API on a real port; `handle` decides each reply. */
async function fakeUpstream(handle: (req: Seen, res: ServerResponse) => void): Promise<{ url: string; seen: Seen[]; server: Server }> {
  const seen: Seen[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const s = { method: req.method ?? '', url: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks) };
      seen.push(s);
      handle(s, res);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen, server };
}

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function gatewayTo(upstreamUrl: string) {
  const store = new MemoryGatewayStore();
  store.addJob(JOB_TOKEN, { id: 9 });
  const app = createGateway({
    store,
    // no upstream retries here (retry.test.ts covers them): errors pass straight through
    config: { provider: 'anthropic', anthropicApiKey: SERVER_KEY, anthropicBaseUrl: upstreamUrl, prices: loadPriceTable(), retry: { retries: 0 } },
    scriptFor: async () => null,
  });
  const gw: TestServer = await listen(app.fetch);
  cleanups.push(() => gw.close());
  return { store, gw };
}

async function waitFor(cond: () => boolean, ms = 3000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error('timed out waiting');
    await new Promise((r) => setTimeout(r, 10));
  }
}

const REQUEST_BODY = JSON.stringify({ model: 'claude-haiku-4-5', max_tokens: 64000, stream: true, messages: [{ role: 'user', content: 'hi \u2603' }] });
const clientHeaders = {
  'content-type': 'application/json',
  'x-api-key': JOB_TOKEN,
  'anthropic-version': '2023-06-01',
  'anthropic-beta': 'claude-code-20250219,interleaved-thinking-2025-05-14',
  'x-claude-code-session-id': 'sess-1',
  'proxy-authorization': 'Basic abc',
  // which account of the server's key is billed is the admin's choice, on this route too (tester finding)
  'openai-organization': 'org-job',
  'openai-project': 'proj_job',
};

describe('anthropic provider', () => {
  it('forwards headers and body untouched except the credentials, and streams before the upstream finishes', async () => {
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    const up = await fakeUpstream((_req, res) => {
      // the account the server's key belongs to (Anthropic's and OpenAI's reply headers) is not the job's to know (tester finding)
      res.writeHead(200, { 'content-type': 'text/event-stream', 'request-id': 'req_123', 'cache-control': 'private', 'anthropic-organization-id': 'org-server', 'openai-organization': 'org-server', 'openai-project': 'proj_server' });
      res.write(HEAD_EVENTS);
      void released.then(() => res.end(TAIL_EVENTS));
    });
    cleanups.push(() => void up.server.close());
    const { store, gw } = await gatewayTo(up.url);

    const res = await fetch(gw.url + '/v1/messages?beta=true', { method: 'POST', headers: clientHeaders, body: REQUEST_BODY });
    expect(res.status).toBe(200);
    expect(res.headers.get('request-id')).toBe('req_123');
    expect([res.headers.get('anthropic-organization-id'), res.headers.get('openai-organization'), res.headers.get('openai-project')]).toEqual([null, null, null]);
    expect(res.headers.get('cache-control')).toBe('no-cache');
    expect(res.headers.get('x-accel-buffering')).toBe('no');
    const reader = res.body!.getReader();
    let got = '';
    while (!got.includes('Hello there')) {
      const r = await reader.read();
      expect(r.done).toBe(false);
      got += new TextDecoder().decode(r.value);
    }
    // the first events reached the client while the upstream still holds the rest
    expect(store.calls).toHaveLength(0);
    release();
    for (;;) {
      const r = await reader.read();
      if (r.done) break;
      got += new TextDecoder().decode(r.value);
    }
    expect(got).toBe(HEAD_EVENTS + TAIL_EVENTS);

    const seen = up.seen[0]!;
    expect(seen.method).toBe('POST');
    expect(seen.url).toBe('/v1/messages?beta=true');
    expect(seen.body.toString('utf8')).toBe(REQUEST_BODY);
    expect(seen.headers['x-api-key']).toBe(SERVER_KEY);
    expect(seen.headers['anthropic-version']).toBe('2023-06-01');
    expect(seen.headers['anthropic-beta']).toBe('claude-code-20250219,interleaved-thinking-2025-05-14');
    expect(seen.headers['x-claude-code-session-id']).toBe('sess-1');
    expect(seen.headers['authorization']).toBeUndefined();
    expect(seen.headers['proxy-authorization']).toBeUndefined();
    expect([seen.headers['openai-organization'], seen.headers['openai-project']]).toEqual([undefined, undefined]);
    expect(JSON.stringify(seen.headers)).not.toContain('jobtoken');

    await waitFor(() => store.calls.length === 1);
    // haiku 4.5: 100 × $1 + 2000 × $0.10 + 40 × $5 per MTok = 100 + 200 + 200 = 500 µ$
    // the ledger names the requested model, not the reply's dated one (meter.ts: priced by what was asked for)
    expect(store.calls[0]).toMatchObject({ jobId: 9, provider: 'anthropic', model: 'claude-haiku-4-5', streamed: true, httpStatus: 200, inputTokens: 100, outputTokens: 40, cacheReadTokens: 2000, cacheWriteTokens: 0, usageKnown: true, costMicros: 500 });
  });

  it('records an estimate (usageKnown false, never $0) when the client goes away mid-stream', async () => {
    let upstreamClosed = false;
    const up = await fakeUpstream((_req, res) => {
      res.on('close', () => (upstreamClosed = true));
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(HEAD_EVENTS); // and never finishes
    });
    cleanups.push(() => {
      up.server.closeAllConnections();
      up.server.close();
    });
    const { store, gw } = await gatewayTo(up.url);
    const ac = new AbortController();
    const res = await fetch(gw.url + '/v1/messages', { method: 'POST', headers: clientHeaders, body: REQUEST_BODY, signal: ac.signal });
    const reader = res.body!.getReader();
    await reader.read();
    ac.abort();
    await waitFor(() => store.calls.length === 1);
    const c = store.calls[0]!;
    expect(c.usageKnown).toBe(false);
    // message_start said 100 input + 2000 cache read: more than bytes/4 of the request, so kept
    expect(c.inputTokens).toBe(100);
    expect(c.cacheReadTokens).toBe(2000);
    // 39 bytes of text seen → ⌈39/4⌉ = 10 output tokens
    expect(c.outputTokens).toBe(10);
    expect(c.costMicros).toBe(100 * 1 + 2000 * 0.1 + 10 * 5);
    // the upstream request was abandoned too
    await waitFor(() => upstreamClosed);
  });

  it('records an estimate when the upstream breaks mid-stream', async () => {
    const up = await fakeUpstream((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(HEAD_EVENTS, () => setTimeout(() => res.socket?.destroy(), 50));
    });
    cleanups.push(() => void up.server.close());
    const { store, gw } = await gatewayTo(up.url);
    const res = await fetch(gw.url + '/v1/messages', { method: 'POST', headers: clientHeaders, body: REQUEST_BODY });
    await res.text().catch(() => '');
    await waitFor(() => store.calls.length === 1);
    expect(store.calls[0]).toMatchObject({ usageKnown: false, inputTokens: 100, outputTokens: 10, httpStatus: 200 });
    expect(store.calls[0]!.costMicros).toBeGreaterThan(0);
  });

  it('passes a gzip-encoded JSON reply through decoded, and reads its usage', async () => {
    const reply = { id: 'msg_2', type: 'message', model: 'claude-sonnet-4-5-20250929', content: [{ type: 'text', text: 'ok' }], usage: { input_tokens: 1000, output_tokens: 100, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 } };
    const up = await fakeUpstream((_req, res) => {
      const z = gzipSync(JSON.stringify(reply));
      res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip', 'content-length': String(z.length) });
      res.end(z);
    });
    cleanups.push(() => void up.server.close());
    const { store, gw } = await gatewayTo(up.url);
    const res = await fetch(gw.url + '/v1/messages', { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${JOB_TOKEN}` }, body: JSON.stringify({ model: 'claude-sonnet-4-5', max_tokens: 200, messages: [{ role: 'user', content: 'hi' }] }) });
    expect(res.headers.get('content-encoding')).toBeNull();
    expect(await res.json()).toEqual(reply);
    expect(up.seen[0]!.headers['x-api-key']).toBe(SERVER_KEY);
    expect(up.seen[0]!.headers['authorization']).toBeUndefined();
    // sonnet 4.5: 1000 × $3 + 100 × $15 per MTok = 4500 µ$
    expect(store.calls[0]).toMatchObject({ streamed: false, usageKnown: true, inputTokens: 1000, outputTokens: 100, costMicros: 4500, model: 'claude-sonnet-4-5' });
  });

  it('passes upstream errors through (status, retry headers) and records them unbilled', async () => {
    const up = await fakeUpstream((_req, res) => {
      res.writeHead(429, { 'content-type': 'application/json', 'retry-after': '7' });
      res.end(JSON.stringify({ type: 'error', error: { type: 'rate_limit_error', message: 'slow down' } }));
    });
    cleanups.push(() => void up.server.close());
    const { store, gw } = await gatewayTo(up.url);
    const res = await fetch(gw.url + '/v1/messages', { method: 'POST', headers: clientHeaders, body: REQUEST_BODY });
    expect(res.status).toBe(429);
    expect(res.headers.get('retry-after')).toBe('7');
    expect(((await res.json()) as { error: { type: string } }).error.type).toBe('rate_limit_error');
    expect(store.calls[0]).toMatchObject({ httpStatus: 429, inputTokens: 0, outputTokens: 0, costMicros: 0, usageKnown: true });
  });

  it('answers 502 api_error and records httpStatus 0 when the upstream cannot be reached', async () => {
    const up = await fakeUpstream(() => undefined);
    const deadUrl = up.url;
    await new Promise((r) => up.server.close(r));
    const { store, gw } = await gatewayTo(deadUrl);
    const res = await fetch(gw.url + '/v1/messages', { method: 'POST', headers: clientHeaders, body: REQUEST_BODY });
    expect(res.status).toBe(502);
    expect(((await res.json()) as { error: { type: string } }).error.type).toBe('api_error');
    expect(store.calls[0]).toMatchObject({ httpStatus: 0, costMicros: 0 });
  });

  it('drops hop-by-hop headers, including those the Connection header names', async () => {
    const up = await fakeUpstream((_req, res) => res.end('{}'));
    cleanups.push(() => void up.server.close());
    const headers = new Headers({ connection: 'keep-alive, x-secret-hop', 'x-secret-hop': 'no', 'keep-alive': 'timeout=5', te: 'trailers', upgrade: 'h2c', 'x-api-key': JOB_TOKEN, 'x-kept': 'yes' });
    const res = await forwardToAnthropic({ baseUrl: up.url, apiKey: SERVER_KEY, pathAndQuery: '/v1/messages', method: 'POST', headers, body: new TextEncoder().encode('{}') as Uint8Array<ArrayBuffer> });
    expect(res.status).toBe(200);
    const h = up.seen[0]!.headers;
    expect(h['x-secret-hop']).toBeUndefined();
    expect(h['keep-alive']).toBeUndefined();
    expect(h['te']).toBeUndefined();
    expect(h['upgrade']).toBeUndefined();
    expect(h['x-api-key']).toBe(SERVER_KEY);
    expect(h['x-kept']).toBe('yes');
  });
});

describe('the content-type a body goes upstream with', () => {
  // fresh-user finding: text/plain (fetch's default for a string body) and curl's
  // application/x-www-form-urlencoded reached the upstream as sent, with a JSON body
  it('a type that is not JSON, or none, goes as application/json; a JSON type goes as the client sent it', async () => {
    const up = await fakeUpstream((_, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ id: 'm', type: 'message', role: 'assistant', model: 'claude-haiku-4-5', content: [], usage: { input_tokens: 1, output_tokens: 1 } }));
    });
    cleanups.push(() => new Promise<void>((r) => up.server.close(() => r())));
    const { gw } = await gatewayTo(up.url);
    const body = JSON.stringify({ model: 'claude-haiku-4-5', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] });
    const sent: Array<string | undefined> = ['text/plain', 'application/x-www-form-urlencoded', undefined, 'application/json; charset=utf-8', 'application/vnd.api+json'];
    for (const type of sent) {
      const headers: Record<string, string> = { 'x-api-key': JOB_TOKEN, 'anthropic-version': '2023-06-01' };
      if (type) headers['content-type'] = type;
      // a Blob body: fetch adds no content-type of its own for one without a type
      const res = await fetch(gw.url + '/v1/messages', { method: 'POST', headers, body: new Blob([body]) });
      expect(res.status, String(type)).toBe(200);
      await res.text();
    }
    expect(up.seen.map((s) => s.headers['content-type'])).toEqual(['application/json', 'application/json', 'application/json', 'application/json; charset=utf-8', 'application/vnd.api+json']);
    expect(up.seen.map((s) => s.body.toString())).toEqual(sent.map(() => body));
  });
});
