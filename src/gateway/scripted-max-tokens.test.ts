/**
 * The scripted model stops at the request's output limit as a real model does (max_tokens;
 * OpenAI's max_tokens / max_completion_tokens / max_output_tokens): a script turn of 1,000
 * output tokens served to a request allowing 10 reports — and is charged — 10, so a tree's
 * spend stays within what its reservations allowed. Real HTTP, every wire format, streamed
 * and not.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { createGateway } from './gateway.js';
import { MemoryGatewayStore } from './memory-store.js';
import type { PriceTable } from './prices.js';
import type { ModelScript } from './script.js';
import { listen, type TestServer } from './test-server.js';

const PRICE = { input: 3, output: 15, cacheWrite5m: 3.75, cacheWrite1h: 6, cacheRead: 0.3 };
const PRICES: PriceTable = { version: 'test', models: {}, default: PRICE };
const TOKEN = 'flj_scriptedcap_0123456789abcdef';
const turn = { usage: { input_tokens: 10, output_tokens: 1000, cache_read_input_tokens: 0, cache_creation_input_tokens: 0 }, content: [{ text: 'a long answer' }] };
const SCRIPT: ModelScript = { model: 'test-model', turns: [turn, turn] };
// capped: 10 input × 3 µ$ + 10 output × 15 µ$ = 180 µ$ (uncapped it would be 15,030 µ$)
const CAPPED_COST = 10 * 3 + 10 * 15;
const BUDGET = 2_000;

const msgs = [{ role: 'user', content: 'hi' }];
const CALLS: Array<[name: string, path: string, body: object, usage: (text: string) => number]> = [
  ['messages, max_tokens', '/v1/messages', { model: 'test-model', max_tokens: 10, messages: msgs }, (t) => (JSON.parse(t) as { usage: { output_tokens: number } }).usage.output_tokens],
  ['messages streamed, max_tokens', '/v1/messages', { model: 'test-model', max_tokens: 10, stream: true, messages: msgs }, (t) => Number(/"message_delta".*"output_tokens":(\d+)/.exec(t)![1])],
  ['chat, max_tokens', '/v1/chat/completions', { model: 'test-model', max_tokens: 10, messages: msgs }, (t) => (JSON.parse(t) as { usage: { completion_tokens: number } }).usage.completion_tokens],
  ['chat streamed, max_completion_tokens', '/v1/chat/completions', { model: 'test-model', max_completion_tokens: 10, stream: true, stream_options: { include_usage: true }, messages: msgs }, (t) => Number(/"completion_tokens":(\d+)/.exec(t)![1])],
  ['responses, max_output_tokens', '/v1/responses', { model: 'test-model', max_output_tokens: 10, input: 'hi' }, (t) => (JSON.parse(t) as { usage: { output_tokens: number } }).usage.output_tokens],
  ['responses streamed, max_output_tokens', '/v1/responses', { model: 'test-model', max_output_tokens: 10, stream: true, input: 'hi' }, (t) => Number(/"response\.completed".*"output_tokens":(\d+)/.exec(t)![1])],
];

const servers: TestServer[] = [];
afterAll(async () => {
  for (const s of servers) await s.close();
});

describe('scripted model and max_tokens', () => {
  it.each(CALLS)('%s: output reported and charged at the limit; spend stays within the budget', async (_name, path, body, usageOf) => {
    const store = new MemoryGatewayStore();
    store.addJob(TOKEN, { id: 12, budgetMicros: BUDGET });
    const gw = await listen(createGateway({ store, config: { provider: 'scripted', anthropicBaseUrl: 'http://127.0.0.1:9', prices: PRICES }, scriptFor: async () => SCRIPT }).fetch);
    servers.push(gw);
    const res = await fetch(gw.url + path, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}` }, body: JSON.stringify(body) });
    expect(res.status).toBe(200);
    const text = await res.text();
    expect(usageOf(text)).toBe(10);
    await expect.poll(() => store.calls.length).toBe(1);
    expect(store.calls[0]).toMatchObject({ inputTokens: 10, outputTokens: 10, costMicros: CAPPED_COST, usageKnown: true });
    expect(store.budgets.get(12)).toEqual({ limit: BUDGET, spent: CAPPED_COST, reserved: 0 });
  });

  it('without a limit in the request the turn is served as scripted', async () => {
    const store = new MemoryGatewayStore();
    store.addJob(TOKEN, { id: 12, budgetMicros: 10_000_000 });
    const app = createGateway({ store, config: { provider: 'scripted', anthropicBaseUrl: 'http://127.0.0.1:9', prices: PRICES }, scriptFor: async () => SCRIPT });
    const res = await app.request('/v1/chat/completions', { method: 'POST', headers: { authorization: `Bearer ${TOKEN}` }, body: JSON.stringify({ model: 'test-model', messages: msgs }) });
    expect(((await res.json()) as { usage: { completion_tokens: number } }).usage.completion_tokens).toBe(1000);
    expect(store.calls[0]).toMatchObject({ outputTokens: 1000, costMicros: 10 * 3 + 1000 * 15 });
  });
});
