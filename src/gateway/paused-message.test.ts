/**
 * The refusal a budget-paused job's token gets tells the truth about its tree: "covers the call
 * that paused it" only when that call (its worst case, $0.480300 here) fits now, whatever this
 * request asks for; otherwise what is left and the top-up the job needs to resume. Never
 * "topped up since" when nobody topped it up (e.g. a tree with a few cents left, enough for
 * 1 µ$ but not for that call).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createGateway } from './gateway.js';
import { MemoryGatewayStore } from './memory-store.js';
import type { PriceTable } from './prices.js';
import { listen } from './test-server.js';

const TOKEN = 'flj_pausedmessage_0123456789abcdef';
const PRICE = { input: 3, output: 15, cacheWrite5m: 3.75, cacheWrite1h: 6, cacheRead: 0.3 };
const PRICES: PriceTable = { version: 'test', models: { cheap: { input: 0.1, output: 0.4, cacheWrite5m: 0.125, cacheWrite1h: 0.2, cacheRead: 0.01 } }, default: PRICE };
const PAUSE_REASON = 'budget exhausted: job tree 4 (job 4) has a budget of $1.000000, $0.900000 spent and $0.000000 reserved by calls in flight, $0.100000 left; this call may cost up to $0.480300. Top up with: flotilla budget 4 --add <USD>';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** A paused job 4 whose tree has `limit` µ$ with `spent` spent (and `reserved` by calls in flight); returns the refusal messages of /v1/messages and /v1/responses. */
async function refusals(limit: number, spent: number, model = 'claude-haiku-4-5', reserved = 0): Promise<{ messages: string; responses: string; store: MemoryGatewayStore }> {
  const store = new MemoryGatewayStore();
  store.addJob(TOKEN, { id: 4, budgetMicros: limit });
  store.budgets.set(4, { limit, spent, reserved });
  store.pauseForBudget(TOKEN, PAUSE_REASON);
  const app = createGateway({ store, config: { provider: 'scripted', anthropicBaseUrl: 'http://127.0.0.1:9', prices: PRICES }, scriptFor: async () => null });
  const gw = await listen(app.fetch);
  cleanups.push(() => gw.close());
  const m = await fetch(`${gw.url}/v1/messages`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': TOKEN },
    body: JSON.stringify({ model, max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] }),
  });
  expect(m.status).toBe(402);
  const r = await fetch(`${gw.url}/v1/responses`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}` }, body: JSON.stringify({ model: model === 'claude-haiku-4-5' ? 'gpt-5' : model, input: 'hi' }) });
  expect(r.status).toBe(429);
  const text = async (res: Response) => ((await res.json()) as { error: { message: string } }).error.message;
  return { messages: await text(m), responses: await text(r), store };
}

describe('the message a budget-paused job token gets', () => {
  it('tree with a few cents left (1 µ$ fits, the call that paused it does not): no "topped up"; what is left; the top-up it needs', async () => {
    // the call that paused it: $0.480300 (its pause reason); $0.100000 left, so $0.380300 short
    const { messages, responses, store } = await refusals(1_000_000, 900_000);
    for (const msg of [messages, responses]) {
      expect(msg).not.toMatch(/topped up/);
      expect(msg).not.toMatch(/covers/);
      // one worst case and one top-up advice, today's: not the pause's own refusal quoted inside (fresh tester)
      expect([msg.match(/may cost up to/g)?.length, msg.match(/flotilla budget/g)?.length, msg.includes('Top up with')]).toEqual([1, 1, false]);
      expect(msg).toBe(`budget exhausted: job 4 is paused for budget; the call that paused it, sent again on resuming (with room for the larger request a resumed harness sends), may cost up to $0.480300 and job tree 4's budget has $0.100000 left now: the job resumes after a top-up of at least $0.380300 (flotilla budget 4 --add <USD>), as a new attempt with a new token`);
    }
    // the probes were released: nothing reserved, nothing spent
    expect(store.budgets.get(4)).toEqual({ limit: 1_000_000, spent: 900_000, reserved: 0 });
    expect(store.reservations.size).toBe(0);
  });

  it('calls in flight hold some of it: named beside what is left, so the top-up adds up (fresh tester: "$0.399944 left", a top-up of "$1.005514" for a $2.005514 call)', async () => {
    // $0.10 not spent, $0.06 of it reserved: $0.04 left; the resume does not count the reservation: 0.480300 − 0.100000 = 0.380300
    const { messages } = await refusals(1_000_000, 900_000, 'claude-haiku-4-5', 60_000);
    expect(messages).toBe(`budget exhausted: job 4 is paused for budget; the call that paused it, sent again on resuming (with room for the larger request a resumed harness sends), may cost up to $0.480300 and job tree 4's budget has $0.040000 left now and $0.060000 reserved by calls in flight (not counted against a resume: they settle at what they use): the job resumes after a top-up of at least $0.380300 (flotilla budget 4 --add <USD>), as a new attempt with a new token`);
  });

  it('tree fully spent: the same, $0 left', async () => {
    const { messages } = await refusals(1_000_000, 1_000_000);
    expect(messages).toBe(`budget exhausted: job 4 is paused for budget; the call that paused it, sent again on resuming (with room for the larger request a resumed harness sends), may cost up to $0.480300 and job tree 4's budget has $0.000000 left now: the job resumes after a top-up of at least $0.480300 (flotilla budget 4 --add <USD>), as a new attempt with a new token`);
  });

  it('a request for a far cheaper model is not told there is room: the call that paused the job still does not fit', async () => {
    // $0.30 left: a 'cheap' call (10 output tokens at $0.40 per million) fits, the $0.480300 one does not
    const { messages, responses } = await refusals(1_000_000, 700_000, 'cheap');
    for (const msg of [messages, responses]) {
      expect(msg).toBe(`budget exhausted: job 4 is paused for budget; the call that paused it, sent again on resuming (with room for the larger request a resumed harness sends), may cost up to $0.480300 and job tree 4's budget has $0.300000 left now: the job resumes after a top-up of at least $0.180300 (flotilla budget 4 --add <USD>), as a new attempt with a new token`);
    }
  });

  it('tree with room for the call that paused it (e.g. topped up, the job not resumed yet): says so, and that this token stays refused', async () => {
    const { messages, responses, store } = await refusals(10_000_000, 900_000);
    for (const msg of [messages, responses]) {
      expect(msg).toBe(
        `budget exhausted: job 4 is paused for budget; its budget now covers the call that paused it (up to $0.480300), but this token stays refused: the job resumes as a new attempt with a new token`,
      );
    }
    expect(store.budgets.get(4)).toEqual({ limit: 10_000_000, spent: 900_000, reserved: 0 });
  });
});
