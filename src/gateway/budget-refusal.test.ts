/**
 * Once a tree is spent, every route and credential form gets the budget error (Anthropic 402
 * billing_error, `x-should-retry: false`) and the upstream sees no call.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { JobRow } from '../store/types.js';
import { createGateway } from './gateway.js';
import { MemoryGatewayStore } from './memory-store.js';
import { loadPriceTable } from './prices.js';
import { listen, type TestServer } from './test-server.js';

const TOKEN = 'flj_refusal_0123456789abcdefghij';
let upstream: Server;
let upstreamCalls = 0;
let gw: TestServer;
const store = new MemoryGatewayStore();
const exhausted: Array<[number, string, number]> = [];

beforeAll(async () => {
  upstream = createServer((req, res) => {
    upstreamCalls += 1;
    req.resume();
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('{}');
  });
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
  store.addJob(TOKEN, { id: 21, rootId: 20, parentId: 20, budgetMicros: 0 });
  store.budgets.set(20, { limit: 500_000, spent: 500_000, reserved: 0 });
  const app = createGateway({
    store,
    config: { provider: 'anthropic', anthropicApiKey: 'sk-up', anthropicBaseUrl: `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`, prices: loadPriceTable() },
    scriptFor: async () => null,
    onBudgetExhausted: async (job: JobRow, message: string, needMicros: number) => {
      exhausted.push([job.id, message, needMicros]);
    },
  });
  gw = await listen(app.fetch);
});
afterAll(async () => {
  await gw.close();
  await new Promise<void>((r) => upstream.close(() => r()));
});

const body = (stream: boolean) => JSON.stringify({ model: 'claude-haiku-4-5', max_tokens: 10, stream, messages: [{ role: 'user', content: 'hi' }] });
const forms: Array<[string, string, Record<string, string>, string]> = [
  ['messages, x-api-key, non-streamed', '/v1/messages', { 'x-api-key': TOKEN }, body(false)],
  ['messages, x-api-key, streamed', '/v1/messages?beta=true', { 'x-api-key': TOKEN }, body(true)],
  ['messages, Bearer, non-streamed', '/v1/messages', { authorization: `Bearer ${TOKEN}` }, body(false)],
  ['messages, Bearer, streamed', '/v1/messages', { authorization: `Bearer ${TOKEN}` }, body(true)],
  ['count_tokens, x-api-key', '/v1/messages/count_tokens', { 'x-api-key': TOKEN }, body(false)],
  ['count_tokens, Bearer', '/v1/messages/count_tokens?beta=true', { authorization: `Bearer ${TOKEN}` }, body(false)],
];

describe('a spent tree', () => {
  for (const [name, path, headers, b] of forms) {
    it(`${name}: 402 billing_error, no retry, upstream untouched`, async () => {
      const before = exhausted.length;
      const res = await fetch(gw.url + path, { method: 'POST', headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01', ...headers }, body: b });
      expect(res.status).toBe(402);
      expect(res.headers.get('x-should-retry')).toBe('false');
      const err = (await res.json()) as { type: string; error: { type: string; message: string } };
      expect(err).toMatchObject({ type: 'error', error: { type: 'billing_error' } });
      expect(err.error.message).toMatch(/job tree 20 \(job 21\) has a budget of \$0\.500000, \$0\.500000 spent .* \$0\.000000 left/);
      expect(upstreamCalls).toBe(0);
      expect(exhausted.length).toBe(before + 1);
      expect(exhausted.at(-1)![0]).toBe(21);
      // The refused call's worst case reaches the pause (stored for the resume rule): the amount
      // the message names for a model call — ⌈bytes / 3⌉ input tokens at haiku's dearest input
      // rate (1-hour cache write, $2/MTok) + 10 output at $5 —, grown by 8 KiB of input for the
      // resumed harness's larger request (worst-case.ts RESUME_GROWTH_BYTES); for count_tokens,
      // never billed, the same figure: the Messages call it counts for (it was 1 µ$, and a
      // top-up of $0.000001 resumed the job only for its next call to pause it again).
      const named = /may cost up to \$(\d+)\.(\d{6})/.exec(err.error.message)!;
      const bytes = Buffer.byteLength(b);
      if (!path.includes('count_tokens')) expect(Number(named[1]) * 1e6 + Number(named[2])).toBe(Math.ceil(bytes / 3) * 2 + 10 * 5);
      expect(exhausted.at(-1)![2]).toBe(Math.ceil((bytes + 8192) / 3) * 2 + 10 * 5);
    });
  }

  it('count_tokens without max_tokens (as harnesses send it): the pause needs the counted call with the default output limit', async () => {
    const b = JSON.stringify({ model: 'claude-haiku-4-5', messages: [{ role: 'user', content: 'count me' }] });
    const res = await fetch(gw.url + '/v1/messages/count_tokens', { method: 'POST', headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01', 'x-api-key': TOKEN }, body: b });
    expect(res.status).toBe(402);
    expect(upstreamCalls).toBe(0);
    // haiku 4.5: its dearest input rate $2/MTok; no max_tokens → 32,000 output tokens (below its 64,000 maximum) at $5/MTok
    expect(exhausted.at(-1)![2]).toBe(Math.ceil((Buffer.byteLength(b) + 8192) / 3) * 2 + 32_000 * 5);
    // and its text names the counted call's worst case (without the resume's 8 KiB), not the free count's 1 µ$
    const counted = Math.ceil(Buffer.byteLength(b) / 3) * 2 + 32_000 * 5;
    const text = ((await res.json()) as { error: { message: string } }).error.message;
    expect(text).toContain(`$0.000000 left; the Messages call it counts may cost up to $0.${String(counted).padStart(6, '0')}.`);
  });

  it('chat completions: the refused call\'s worst case, grown for the resume, reaches the pause too', async () => {
    const res = await fetch(gw.url + '/v1/chat/completions', { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}` }, body: JSON.stringify({ model: 'gpt-4o-mini', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] }) });
    expect(res.status).toBe(429);
    const err = (await res.json()) as { error: { code: string; message: string } };
    expect(err.error.code).toBe('insufficient_quota');
    // gpt-4o-mini: input $0.15/MTok (its dearest input-side rate), output $0.60; µ$ rounded up
    const bytes = Buffer.byteLength(JSON.stringify({ model: 'gpt-4o-mini', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] }));
    const named = /may cost up to \$(\d+)\.(\d{6})/.exec(err.error.message)!;
    expect(Number(named[1]) * 1e6 + Number(named[2])).toBe(Math.ceil((Math.ceil(bytes / 3) * 15 + 10 * 60) / 100));
    expect(exhausted.at(-1)!.slice(0, 1).concat(exhausted.at(-1)![2])).toEqual([21, Math.ceil((Math.ceil((bytes + 8192) / 3) * 15 + 10 * 60) / 100)]);
  });

  it('every refusal is in the ledger as refused, unbilled', () => {
    // the Anthropic forms' 402s, the bare count_tokens' 402, then the chat completion's 429 (OpenAI's insufficient_quota)
    expect(store.calls.map((c) => c.httpStatus)).toEqual([...forms.map(() => 402), 402, 429]);
    expect(store.calls.every((c) => c.refused === 'budget' && c.costMicros === 0)).toBe(true);
    expect(store.budgets.get(20)).toEqual({ limit: 500_000, spent: 500_000, reserved: 0 });
  });
});

describe('oversize requests', () => {
  it('Anthropic and OpenAI formats: 413 in each shape naming the size, recorded as refused, upstream untouched', async () => {
    const st = new MemoryGatewayStore();
    st.addJob(TOKEN, { id: 5 });
    const app = createGateway({ store: st, config: { provider: 'anthropic', anthropicApiKey: 'k', anthropicBaseUrl: `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`, prices: loadPriceTable(), maxRequestBytes: 1000 }, scriptFor: async () => null });
    const big = JSON.stringify({ model: 'claude-haiku-4-5', max_tokens: 10, messages: [{ role: 'user', content: 'x'.repeat(2000) }] });
    const a = await app.request('/v1/messages', { method: 'POST', headers: { 'x-api-key': TOKEN }, body: big });
    expect(a.status).toBe(413);
    expect(((await a.json()) as { error: { type: string; message: string } }).error).toMatchObject({ type: 'request_too_large', message: expect.stringMatching(/limit is 1000/) });
    const b = await app.request('/v1/chat/completions', { method: 'POST', headers: { authorization: `Bearer ${TOKEN}` }, body: big });
    expect(b.status).toBe(413);
    expect(((await b.json()) as { error: { code: string } }).error.code).toBe('request_too_large');
    expect(st.calls.map((c) => [c.httpStatus, c.refused])).toEqual([
      [413, 'too_large'],
      [413, 'too_large'],
    ]);
    expect(upstreamCalls).toBe(0);
  });
});
