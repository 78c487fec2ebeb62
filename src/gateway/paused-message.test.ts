/**
 * The refusal a budget-paused job's token gets tells the truth about its tree: "room for a call
 * again" only when a call like this one fits now; otherwise what is left and that the job
 * resumes after a top-up. Never "topped up since" when nobody topped it up (e.g. a tree with a
 * few cents left, enough for 1 µ$ but not for a call).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createGateway } from './gateway.js';
import { MemoryGatewayStore } from './memory-store.js';
import type { PriceTable } from './prices.js';
import { listen } from './test-server.js';

const TOKEN = 'flj_pausedmessage_0123456789abcdef';
const PRICE = { input: 3, output: 15, cacheWrite5m: 3.75, cacheWrite1h: 6, cacheRead: 0.3 };
const PRICES: PriceTable = { version: 'test', models: {}, default: PRICE };
const PAUSE_REASON = 'budget exhausted: job tree 4 (job 4) has a budget of $1.000000, $0.900000 spent and $0.000000 reserved by calls in flight, $0.100000 left; this call may cost up to $0.480300. Top up with: flotilla budget 4 --add <USD>';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** A paused job 4 whose tree has `limit` µ$ with `spent` spent; returns the refusal messages of /v1/messages and /v1/responses. */
async function refusals(limit: number, spent: number): Promise<{ messages: string; responses: string; store: MemoryGatewayStore }> {
  const store = new MemoryGatewayStore();
  store.addJob(TOKEN, { id: 4, budgetMicros: limit });
  store.budgets.set(4, { limit, spent, reserved: 0 });
  store.pauseForBudget(TOKEN, PAUSE_REASON);
  const app = createGateway({ store, config: { provider: 'scripted', anthropicBaseUrl: 'http://127.0.0.1:9', prices: PRICES }, scriptFor: async () => null });
  const gw = await listen(app.fetch);
  cleanups.push(() => gw.close());
  const m = await fetch(`${gw.url}/v1/messages`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': TOKEN },
    body: JSON.stringify({ model: 'claude-haiku-4-5', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] }),
  });
  expect(m.status).toBe(402);
  const r = await fetch(`${gw.url}/v1/responses`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}` }, body: JSON.stringify({ model: 'gpt-5', input: 'hi' }) });
  expect(r.status).toBe(429);
  const text = async (res: Response) => ((await res.json()) as { error: { message: string } }).error.message;
  return { messages: await text(m), responses: await text(r), store };
}

describe('the message a budget-paused job token gets', () => {
  it('tree with a few cents left (1 µ$ fits, a call does not): no "topped up"; what is left; resumes after a top-up', async () => {
    // a call like this one: ~80 bytes / 3 input tokens at 6 µ$ + 32,000 output tokens at 15 µ$ ≈ $0.48 > $0.10 left
    const { messages, responses, store } = await refusals(1_000_000, 900_000);
    for (const msg of [messages, responses]) {
      expect(msg).not.toMatch(/topped up/);
      expect(msg).not.toMatch(/room for a call/);
      expect(msg).toBe(`budget exhausted: job 4 is paused for budget (${PAUSE_REASON}); its budget has $0.100000 left now; the job resumes after a top-up, as a new attempt with a new token`);
    }
    // the probes were released: nothing reserved, nothing spent
    expect(store.budgets.get(4)).toEqual({ limit: 1_000_000, spent: 900_000, reserved: 0 });
    expect(store.reservations.size).toBe(0);
  });

  it('tree fully spent: the same, $0 left', async () => {
    const { messages } = await refusals(1_000_000, 1_000_000);
    expect(messages).toBe(`budget exhausted: job 4 is paused for budget (${PAUSE_REASON}); its budget has $0.000000 left now; the job resumes after a top-up, as a new attempt with a new token`);
  });

  it('tree with room for a call (e.g. topped up, the job not resumed yet): says there is room, and that this token stays refused', async () => {
    const { messages, responses, store } = await refusals(10_000_000, 900_000);
    for (const msg of [messages, responses]) {
      expect(msg).toBe(
        `budget exhausted: job 4 is paused for budget (${PAUSE_REASON}); its tree has room for a call again, but this token stays refused: the job resumes as a new attempt with a new token once its tree covers the call that paused it (after a top-up, or once calls in flight settle)`,
      );
    }
    expect(store.budgets.get(4)).toEqual({ limit: 10_000_000, spent: 900_000, reserved: 0 });
  });
});
