/**
 * `/v1/messages` without `max_tokens` (issue 3): Anthropic's Messages API requires the field
 * (400 `invalid_request_error` "max_tokens: Field required"), so the gateway neither forwards
 * such a request nor reserves an unbounded amount for it: 400 in Anthropic's shape naming
 * max_tokens, `x-should-retry: false`, recorded as refused (`invalid_request`, the model
 * named), nothing reserved, the upstream untouched, the job not paused. Streamed or not, with
 * the anthropic provider (real HTTP, a fake upstream) and the scripted one.
 * `/v1/messages/count_tokens` takes no max_tokens and is still forwarded without one.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createGateway } from './gateway.js';
import { MemoryGatewayStore } from './memory-store.js';
import { loadPriceTable } from './prices.js';
import { parseModelScript } from './script.js';
import { listenNode, type TestServer } from './test-server.js';
import { fakeUpstream } from './test-upstream.js';

const TOKEN = 'flj_maxtokens_required_0123456789';
const store = new MemoryGatewayStore();
const exhausted: number[] = [];
const script = parseModelScript({ model: 'claude-sonnet-4-5', turns: [{ usage: { input_tokens: 10, output_tokens: 2 }, content: [{ text: 'hi' }] }] });
let up: Awaited<ReturnType<typeof fakeUpstream>>;
const servers: TestServer[] = [];

beforeAll(async () => {
  up = await fakeUpstream((r) =>
    r.url.startsWith('/v1/messages/count_tokens')
      ? { body: '{"input_tokens":7}' }
      : { body: JSON.stringify({ id: 'm', type: 'message', role: 'assistant', model: 'claude-sonnet-4-5', content: [], stop_reason: 'end_turn', usage: { input_tokens: 10, output_tokens: 2 } }) },
  );
  store.addJob(TOKEN, { id: 5, budgetMicros: 100_000_000 });
  for (const provider of ['anthropic', 'scripted'] as const) {
    const gateway = createGateway({
      store,
      config: { provider, anthropicApiKey: 'sk-server-maxtokens', anthropicBaseUrl: up.url, prices: loadPriceTable(), retry: { retries: 0 } },
      scriptFor: async () => script,
      onBudgetExhausted: async (job) => void exhausted.push(job.id),
    });
    servers.push(await listenNode((req, res) => gateway.node(req, res)));
  }
});
afterAll(async () => {
  for (const s of servers) await s.close();
  await up.close();
});
beforeEach(() => {
  store.calls.length = 0;
  up.seen.length = 0;
});

const post = (base: string, path: string, body: object) =>
  fetch(base + path, { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': TOKEN, 'anthropic-version': '2023-06-01' }, body: JSON.stringify(body) });
const msgs = [{ role: 'user', content: 'hello' }];

describe('/v1/messages without max_tokens', () => {
  it.each([
    { provider: 'anthropic', i: 0, stream: false },
    { provider: 'anthropic', i: 0, stream: true },
    { provider: 'scripted', i: 1, stream: false },
    { provider: 'scripted', i: 1, stream: true },
  ])('$provider provider, streamed $stream: 400 invalid_request_error naming max_tokens, recorded as refused, nothing reserved or forwarded', async ({ i, stream }) => {
    const res = await post(servers[i]!.url, '/v1/messages', { model: 'claude-sonnet-4-5', stream, messages: msgs });
    expect(res.status).toBe(400);
    expect(res.headers.get('x-should-retry')).toBe('false');
    // Anthropic's own error shape and text for the missing field
    expect(await res.json()).toEqual({ type: 'error', error: { type: 'invalid_request_error', message: 'max_tokens: Field required' } });
    expect(store.calls.map((c) => [c.httpStatus, c.refused, c.model, c.costMicros, c.api])).toEqual([[400, 'invalid_request', 'claude-sonnet-4-5', 0, 'anthropic-messages']]);
    expect(store.budgets.get(5) ?? { reserved: 0, spent: 0 }).toMatchObject({ reserved: 0, spent: 0 });
    expect(store.reservations.size).toBe(0);
    expect(up.seen).toHaveLength(0);
    expect(exhausted).toEqual([]);
  });

  it('with max_tokens the same request is served (anthropic: forwarded once)', async () => {
    const res = await post(servers[0]!.url, '/v1/messages', { model: 'claude-sonnet-4-5', max_tokens: 100, messages: msgs });
    expect(res.status).toBe(200);
    await res.arrayBuffer();
    expect(up.seen).toHaveLength(1);
    // 10 input × 3 µ$ + 2 output × 15 µ$ = 60 µ$
    expect(store.calls.map((c) => [c.httpStatus, c.refused, c.costMicros])).toEqual([[200, undefined, 60]]);
  });

  it('count_tokens takes no max_tokens: forwarded without one', async () => {
    const res = await post(servers[0]!.url, '/v1/messages/count_tokens', { model: 'claude-sonnet-4-5', messages: msgs });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ input_tokens: 7 });
    expect(up.seen.map((s) => s.url)).toEqual(['/v1/messages/count_tokens']);
    // recorded, not billed (unbilled-call.ts)
    expect(store.calls.map((c) => [c.api, c.httpStatus, c.refused, c.costMicros])).toEqual([['anthropic-count-tokens', 200, undefined, 0]]);
  });
});
