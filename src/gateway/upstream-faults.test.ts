/**
 * What an upstream can do wrong, through the gateway's node:http path and a real fake upstream:
 * a reply without usage and a huge body, a gzip bomb, a NUL in the reply's model name, an
 * upstream that is down. Prices: claude-sonnet-4-5, 3 µ$ per input token, 15 µ$ per output token.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createGateway } from './gateway.js';
import { MemoryGatewayStore } from './memory-store.js';
import { loadPriceTable } from './prices.js';
import { MAX_REPLY_BYTES } from './upstream-http.js';

const TOKEN = 'flj_faults_0123456789abcdefghijkl';
const store = new MemoryGatewayStore();
let up: Server;
let gwServer: Server;
let gwUrl = '';
let deadUrl = '';
let upstreamCalls = 0;
// 1 MB of gzip that unpacks past the reply limit.
const BOMB = gzipSync(Buffer.alloc(MAX_REPLY_BYTES + 1024, 0x20));

beforeAll(async () => {
  up = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      upstreamCalls++;
      const what = (JSON.parse(body) as { messages: Array<{ content: string }> }).messages[0]?.content;
      if (what === 'no-usage') {
        res.writeHead(200, { 'content-type': 'application/json' });
        return void res.end(' '.repeat(2_000_000)); // 2 MB, no usage: ~500,000 "tokens" by size
      }
      if (what === 'bomb') {
        res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip' });
        return void res.end(BOMB);
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ id: 'm', type: 'message', role: 'assistant', model: 'claude-sonnet-4-5\u0000', content: [], stop_reason: 'end_turn', usage: { input_tokens: 10, output_tokens: 2 } }));
    });
  });
  await new Promise<void>((r) => up.listen(0, '127.0.0.1', r));
  // A port nobody listens on, for the "upstream is down" cases.
  const probe = createServer();
  await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
  deadUrl = `http://127.0.0.1:${(probe.address() as AddressInfo).port}`;
  await new Promise<void>((r) => probe.close(() => r()));
  store.addJob(TOKEN, { id: 4, budgetMicros: 5_000_000 });
  const live = createGateway({ store, config: { provider: 'anthropic', anthropicApiKey: 'sk', anthropicBaseUrl: `http://127.0.0.1:${(up.address() as AddressInfo).port}`, prices: loadPriceTable(), retry: { retries: 0 } }, scriptFor: async () => null });
  const dead = createGateway({
    store,
    config: { provider: 'anthropic', anthropicApiKey: 'sk', anthropicBaseUrl: deadUrl, openai: { provider: 'openai', baseUrl: deadUrl, apiKeys: ['sk'] }, modelProviders: [{ pattern: 'gpt-*', provider: 'openai' }, { pattern: '*', provider: 'anthropic' }], prices: loadPriceTable(), retry: { retries: 1, baseMs: 1 } },
    scriptFor: async () => null,
  });
  gwServer = createServer((req, res) => (req.headers['x-dead'] ? dead.node(req, res) : live.node(req, res)));
  await new Promise<void>((r) => gwServer.listen(0, '127.0.0.1', r));
  gwUrl = `http://127.0.0.1:${(gwServer.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await new Promise<void>((r) => gwServer.close(() => r()));
  await new Promise<void>((r) => up.close(() => r()));
});

const call = (path: string, body: string, extra: Record<string, string> = {}) =>
  fetch(`${gwUrl}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': TOKEN, ...extra }, body });
const messages = (content: string, maxTokens = 20) => JSON.stringify({ model: 'claude-sonnet-4-5', max_tokens: maxTokens, messages: [{ role: 'user', content }] });

describe('gateway: upstream faults', () => {
  it('a reply without usage is charged an estimate whose output stops at max_tokens, not one token per 4 bytes of body', async () => {
    const body = messages('no-usage');
    const res = await call('/v1/messages', body);
    expect(res.status).toBe(200);
    await res.arrayBuffer();
    const c = store.calls.at(-1)!;
    const inputTokens = Math.ceil(Buffer.byteLength(body) / 4);
    expect(c).toMatchObject({ usageKnown: false, inputTokens, outputTokens: 20, costMicros: inputTokens * 3 + 20 * 15 });
  });

  it('a 200 gzip body that unpacks past the limit is a 502 naming the limit, not retried by anyone, charged at the worst case (the provider billed it)', async () => {
    const before = store.calls.length;
    const body = messages('bomb');
    const res = await call('/v1/messages', body);
    expect(res.status).toBe(502);
    expect(res.headers.get('x-should-retry')).toBe('false');
    const err = (await res.json()) as { type: string; error: { type: string; message: string } };
    expect(err).toMatchObject({ type: 'error', error: { type: 'api_error' } });
    expect(err.error.message).toContain(`${MAX_REPLY_BYTES}-byte limit`);
    // input ⌈bytes/4⌉ at 3 µ$, output at max_tokens (20) at 15 µ$
    const input = Math.ceil(Buffer.byteLength(body) / 4);
    expect(store.calls.slice(before)).toEqual([expect.objectContaining({ httpStatus: 502, usageKnown: false, inputTokens: input, outputTokens: 20, costMicros: input * 3 + 20 * 15 })]);
  });

  it("a NUL in the reply's model name never reaches the ledger (PostgreSQL cannot store NUL): the row names the requested model", async () => {
    const res = await call('/v1/messages', messages('nul-model'));
    expect(res.status).toBe(200);
    await res.arrayBuffer();
    expect(store.calls.at(-1)).toMatchObject({ model: 'claude-sonnet-4-5', inputTokens: 10, outputTokens: 2, usageKnown: true, costMicros: 10 * 3 + 2 * 15 });
  });

  it('a NUL in the request\'s model, or a max_tokens that is not an integer ≥ 1, is a 400 naming the field; the upstream sees nothing', async () => {
    const before = upstreamCalls;
    const nul = await call('/v1/messages', JSON.stringify({ model: 'claude-sonnet-4-5\u0000', max_tokens: 5, messages: [{ role: 'user', content: 'x' }] }));
    expect(nul.status).toBe(400);
    expect(((await nul.json()) as { error: { message: string } }).error.message).toBe('model: must not contain NUL');
    for (const m of ['1e300', '-1000000000000', '2.5', '0']) {
      const r = await call('/v1/messages', `{"model":"claude-sonnet-4-5","max_tokens":${m},"messages":[{"role":"user","content":"x"}]}`);
      expect(r.status, m).toBe(400);
      expect(((await r.json()) as { error: { message: string } }).error.message).toMatch(/^max_tokens: /);
    }
    const chat = await call('/v1/chat/completions', JSON.stringify({ model: 'gpt-4o\u0000', messages: [{ role: 'user', content: 'x' }] }), { authorization: `Bearer ${TOKEN}` });
    expect(chat.status).toBe(400);
    expect(upstreamCalls).toBe(before);
  });

  it('an upstream that is down: after the retries, a 502 with x-should-retry: false on every wire format', async () => {
    const a = await call('/v1/messages', messages('x'), { 'x-dead': '1' });
    expect(a.status).toBe(502);
    expect(a.headers.get('x-should-retry')).toBe('false');
    const o = await call('/v1/chat/completions', JSON.stringify({ model: 'gpt-4o', messages: [{ role: 'user', content: 'x' }] }), { 'x-dead': '1' });
    expect(o.status, await o.clone().text()).toBe(502);
    expect(o.headers.get('x-should-retry')).toBe('false');
    expect(((await o.json()) as { error: { type: string } }).error.type).toBe('server_error');
  });
});
