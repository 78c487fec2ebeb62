/**
 * OpenAI Responses `background: true` is refused: the upstream would answer `status: "queued"`
 * with `usage: null` and bill the generation later, out of the gateway's sight. The refusal is a
 * 400 invalid_request_error naming the field; the upstream is untouched, nothing is reserved,
 * the job is not paused.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createGateway } from './gateway.js';
import { MemoryGatewayStore } from './memory-store.js';
import { fakeUpstream } from './test-upstream.js';
import { listen } from './test-server.js';

const TOKEN = 'flj_background_0123456789abcdefghij';
const prices = { version: 't', models: {}, default: { input: 1, output: 2, cacheWrite5m: 1, cacheWrite1h: 1, cacheRead: 0.5 } };

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function setup() {
  const up = await fakeUpstream(() => ({
    body: JSON.stringify({ id: 'resp_1', object: 'response', status: 'completed', model: 'qwen-local', output: [], usage: { input_tokens: 10, output_tokens: 5 } }),
  }));
  cleanups.push(() => up.close());
  const store = new MemoryGatewayStore();
  store.addJob(TOKEN, { id: 4, budgetMicros: 10_000_000 });
  const paused: number[] = [];
  const app = createGateway({
    store,
    config: { provider: 'scripted', anthropicBaseUrl: 'http://127.0.0.1:9', prices, openai: { provider: 'openai', baseUrl: `${up.url}/v1`, apiKeys: ['sk-test-background'] } },
    scriptFor: async () => null,
    onBudgetExhausted: async (job) => void paused.push(job.id),
  });
  const gw = await listen(app.fetch);
  cleanups.push(() => gw.close());
  const post = (body: unknown) => fetch(`${gw.url}/v1/responses`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}` }, body: JSON.stringify(body) });
  return { up, store, paused, post };
}

describe('Responses background: true', () => {
  it('is refused with 400 invalid_request_error naming "background"; upstream untouched, nothing reserved, job not paused', async () => {
    const { up, store, paused, post } = await setup();
    const res = await post({ model: 'qwen-local', input: 'write a novel', background: true, max_output_tokens: 1000 });
    expect(res.status).toBe(400);
    expect(res.headers.get('x-should-retry')).toBe('false');
    const body = (await res.json()) as { error: { type: string; param: string | null; message: string } };
    expect(body.error.type).toBe('invalid_request_error');
    expect(body.error.param).toBe('background');
    expect(body.error.message).toMatch(/^background: background responses cannot be metered: /);
    expect(up.seen).toEqual([]);
    expect(paused).toEqual([]);
    expect(store.reservations.size).toBe(0);
    expect(store.budgets.get(4) ?? { spent: 0, reserved: 0 }).toMatchObject({ spent: 0, reserved: 0 });
    expect(store.calls).toHaveLength(1);
    expect(store.calls[0]).toMatchObject({ httpStatus: 400, refused: 'invalid_request', costMicros: 0 });
  });

  it('background: false (or null) goes through and is metered as usual', async () => {
    const { up, store, post } = await setup();
    expect((await post({ model: 'qwen-local', input: 'hi', background: false, max_output_tokens: 100 })).status).toBe(200);
    expect((await post({ model: 'qwen-local', input: 'hi', background: null, max_output_tokens: 100 })).status).toBe(200);
    expect(up.seen).toHaveLength(2);
    // 10 input × 1 µ$ + 5 output × 2 µ$ = 20 µ$ per call
    expect(store.calls.map((c) => [c.httpStatus, c.usageKnown, c.costMicros])).toEqual([
      [200, true, 20],
      [200, true, 20],
    ]);
  });
});
