/**
 * An upstream 2xx reply over the whole-reply size limit (lowered here to 4 KiB): the provider did
 * the work and billed it, so the gateway makes exactly one upstream call (no retry), answers 502
 * naming the limit in the wire format, and charges the call at its worst-case estimate (input by
 * size, output at max_tokens, marked estimated). Through the node:http path and a fake upstream.
 * Prices: claude-sonnet-4-5 and gpt-4o from the shipped table (3/15 and 2.5/10 USD per MTok).
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createGateway } from './gateway.js';
import { MemoryGatewayStore } from './memory-store.js';
import { loadPriceTable } from './prices.js';
import { setMaxReplyBytes } from './upstream-http.js';

const TOKEN = 'flj_toolarge_0123456789abcdefghij';
const LIMIT = 4096;
const store = new MemoryGatewayStore();
let up: Server;
let gw: Server;
let gwUrl = '';
const upstreamCalls: string[] = [];

beforeAll(async () => {
  setMaxReplyBytes(LIMIT);
  up = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      const what = String((JSON.parse(body) as { messages: Array<{ content: string }> }).messages[0]?.content);
      upstreamCalls.push(what);
      const big = JSON.stringify({ id: 'm', type: 'message', role: 'assistant', model: 'claude-sonnet-4-5', content: [{ type: 'text', text: 'x'.repeat(LIMIT * 2) }], stop_reason: 'end_turn', usage: { input_tokens: 10, output_tokens: 2 } });
      if (what === 'gzip') {
        // small on the wire, over the limit once decoded
        res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip' });
        return void res.end(gzipSync(big));
      }
      res.writeHead(what === 'error' ? 500 : 200, { 'content-type': 'application/json' });
      res.end(big);
    });
  });
  await new Promise<void>((r) => up.listen(0, '127.0.0.1', r));
  const base = `http://127.0.0.1:${(up.address() as AddressInfo).port}`;
  store.addJob(TOKEN, { id: 7, budgetMicros: 5_000_000 });
  const app = createGateway({
    store,
    config: {
      provider: 'anthropic',
      anthropicApiKey: 'sk-a',
      anthropicBaseUrl: base,
      openai: { provider: 'openai', baseUrl: base, apiKeys: ['sk-o'] },
      modelProviders: [{ pattern: 'gpt-*', provider: 'openai' }, { pattern: '*', provider: 'anthropic' }],
      prices: loadPriceTable(),
      retry: { retries: 2, baseMs: 1 },
    },
    scriptFor: async () => null,
  });
  gw = createServer(app.node);
  await new Promise<void>((r) => gw.listen(0, '127.0.0.1', r));
  gwUrl = `http://127.0.0.1:${(gw.address() as AddressInfo).port}`;
});

afterAll(async () => {
  setMaxReplyBytes();
  await new Promise<void>((r) => gw.close(() => r()));
  await new Promise<void>((r) => up.close(() => r()));
});

const post = (path: string, body: string) => fetch(gwUrl + path, { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': TOKEN, authorization: `Bearer ${TOKEN}` }, body });

describe('a 2xx reply over the size limit', () => {
  for (const what of ['plain', 'gzip']) {
    it(`/v1/messages (${what}): one upstream call, 502 api_error naming the limit, charged at the worst case`, async () => {
      const before = { up: upstreamCalls.length, calls: store.calls.length, spent: store.budgets.get(7)?.spent ?? 0 };
      const body = JSON.stringify({ model: 'claude-sonnet-4-5', max_tokens: 300, messages: [{ role: 'user', content: what }] });
      const res = await post('/v1/messages', body);
      expect(res.status).toBe(502);
      expect(res.headers.get('x-should-retry')).toBe('false');
      const err = (await res.json()) as { type: string; error: { type: string; message: string } };
      expect(err).toMatchObject({ type: 'error', error: { type: 'api_error' } });
      expect(err.error.message).toContain(`${LIMIT}-byte limit`);
      expect(upstreamCalls.length - before.up).toBe(1);
      // input ⌈bytes/4⌉ at 3 µ$, output = max_tokens 300 at 15 µ$
      const input = Math.ceil(Buffer.byteLength(body) / 4);
      const cost = input * 3 + 300 * 15;
      expect(store.calls.slice(before.calls)).toEqual([expect.objectContaining({ httpStatus: 502, usageKnown: false, inputTokens: input, outputTokens: 300, costMicros: cost })]);
      expect(store.budgets.get(7)).toMatchObject({ spent: before.spent + cost, reserved: 0 });
    });
  }

  it('/v1/chat/completions: one upstream call, 502 server_error naming the limit, charged at the worst case', async () => {
    const before = { up: upstreamCalls.length, calls: store.calls.length };
    const body = JSON.stringify({ model: 'gpt-4o', max_completion_tokens: 200, messages: [{ role: 'user', content: 'chat' }] });
    const res = await post('/v1/chat/completions', body);
    expect(res.status).toBe(502);
    expect(res.headers.get('x-should-retry')).toBe('false');
    const err = (await res.json()) as { error: { type: string; message: string } };
    expect(err.error.type).toBe('server_error');
    expect(err.error.message).toContain(`${LIMIT}-byte limit`);
    expect(upstreamCalls.length - before.up).toBe(1);
    // gpt-4o: 2.5 µ$ per input token, 10 per output token; input ⌈bytes/4⌉, output 200
    const input = Math.ceil(Buffer.byteLength(body) / 4);
    expect(store.calls.slice(before.calls)).toEqual([expect.objectContaining({ httpStatus: 502, usageKnown: false, inputTokens: input, outputTokens: 200, costMicros: Math.ceil(input * 2.5 + 200 * 10) })]);
  });

  it('an error reply (500) over the limit is not billed: retried as any 500, then recorded with no tokens', async () => {
    const before = { up: upstreamCalls.length, calls: store.calls.length };
    const res = await post('/v1/messages', JSON.stringify({ model: 'claude-sonnet-4-5', max_tokens: 300, messages: [{ role: 'user', content: 'error' }] }));
    expect(res.status).toBe(502);
    await res.arrayBuffer();
    expect(upstreamCalls.length - before.up).toBe(3);
    expect(store.calls.slice(before.calls)).toEqual([expect.objectContaining({ httpStatus: 0, costMicros: 0 })]);
  });
});
