/**
 * Issue 6, the refusal's top-up hint, end to end through the real gateway on a real store
 * (SQLite, and two gateways over one PostgreSQL): grandchild G (its own sub-limit) under child
 * C (its own sub-limit) in tree R. The refusal names the budget that actually refused — C's
 * when only C's has no room, G's when only G's — and when several budgets on G's path are
 * short, it names the one with least room, lists the others, and the hint names each, from
 * the top of the tree down (a sub-limit never grows past what is left above it).
 */
import { describe, expect, it } from 'vitest';
import { refusingBudget } from '../store/job-budgets.js';
import type { JobRow, Store } from '../store/types.js';
import { refusedByCallsInFlight } from './budget-wait.js';
import type { PriceTable } from './prices.js';
import { startGateway } from './test-server.js';
import { onSqlite, onTwoPostgres, runningJob } from './test-stores.js';
import { fakeUpstream } from './test-upstream.js';

const PRICE = { input: 3, output: 15, cacheWrite5m: 3.75, cacheWrite1h: 6, cacheRead: 0.3 };
const PRICES: PriceTable = { version: 'test', models: { 'test-model': PRICE }, default: PRICE };
const MAX_TOKENS = 2600;
const BODY = JSON.stringify({ model: 'test-model', max_tokens: MAX_TOKENS, messages: [{ role: 'user', content: 'hello' }] });
// Worked out independently of gateway/budget.ts: ⌈bytes/3⌉ input tokens at 6 µ$ + 2,600 × 15 µ$ (≈ $0.0392).
const WORST = Math.ceil(Buffer.byteLength(BODY) / 3) * 6 + MAX_TOKENS * 15;
const REPLY = { id: 'msg_x', type: 'message', role: 'assistant', model: 'test-model', content: [{ type: 'text', text: 'ok' }], stop_reason: 'end_turn', usage: { input_tokens: 10, output_tokens: 100 } };
const T = Date.now();

/** $ with six decimals, written here (not core/money.ts) so the expected text is independent. */
const usd = (micros: number) => `$${Math.floor(micros / 1e6)}.${String(micros % 1e6).padStart(6, '0')}`;

/** Charges `micros` to job `jobId` of tree `rootId` (its path's sub-limits too), as a settled call would. */
async function spend(store: Store, rootId: number, jobId: number | undefined, micros: number): Promise<void> {
  const r = await store.reserveBudget(rootId, micros, T, 60_000, jobId);
  if (!r?.ok) throw new Error(`${micros} µ$ do not fit job ${jobId ?? rootId}`);
  await store.settleBudget(rootId, r.reservationId, micros, T);
}

let serial = 0;
/** Tree R ($rootLimit) → C (sub-limit cLimit) → G (sub-limit gLimit), each running with a token of its own; G's token. */
async function tree(store: Store, rootLimit: number, cLimit: number, gLimit: number): Promise<{ r: JobRow; c: JobRow; g: JobRow; gToken: string }> {
  const k = `${++serial}_${Math.random().toString(36).slice(2, 10)}`.padEnd(24, '0');
  const r = await runningJob(store, `flj_hint_r_${k}`, { budgetMicros: rootLimit });
  const c = await runningJob(store, `flj_hint_c_${k}`, { budgetMicros: cLimit, parentId: r.id });
  const gToken = `flj_hint_g_${k}`;
  const g = await runningJob(store, gToken, { budgetMicros: gLimit, parentId: c.id });
  return { r, c, g, gToken };
}

async function run(stores: Store[]): Promise<void> {
  const store = stores[0]!;
  const up = await fakeUpstream(() => ({ body: JSON.stringify(REPLY) }));
  const exhausted: Array<[number, string]> = [];
  const gw = await startGateway({
    upstream: up,
    store,
    via: 'fetch',
    config: { prices: PRICES, budgetWaitMs: 0 },
    onBudgetExhausted: async (job: JobRow, message: string) => void exhausted.push([job.id, message]),
  });
  /** G's call: the refusal's status, error type and message; the hook must have paused G with the same text. */
  const refusal = async (gToken: string, g: JobRow) => {
    const res = await gw.post('/v1/messages', BODY, { token: gToken });
    const body = (await res.json()) as { error: { type: string; message: string } };
    expect([res.status, body.error.type]).toEqual([402, 'billing_error']);
    expect(exhausted.at(-1)).toEqual([g.id, body.error.message]);
    return body.error.message;
  };
  try {
    // only C's sub-limit is short: $0.03 left of $0.10; G's own has $0.05
    {
      const { r, c, g, gToken } = await tree(store, 10_000_000, 100_000, 50_000);
      await spend(store, r.id, c.id, 70_000);
      expect(await refusal(gToken, g)).toBe(
        `budget exhausted: job ${c.id}'s budget (sub-limit in job tree ${r.id}, shared by job ${g.id}) is $0.100000, $0.070000 spent and $0.000000 reserved by calls in flight, ` +
          `$0.030000 left; this call may cost up to ${usd(WORST)}. Top up with: flotilla budget ${c.id} --add <USD> (flotilla budget ${g.id} says the least that resumes this job)`,
      );
    }
    // only G's own sub-limit is short: $0.03 of its own, C has $0.20
    {
      const { r, g, gToken } = await tree(store, 10_000_000, 200_000, 30_000);
      expect(await refusal(gToken, g)).toBe(
        `budget exhausted: job ${g.id}'s budget (sub-limit in job tree ${r.id}) is $0.030000, $0.000000 spent and $0.000000 reserved by calls in flight, ` +
          `$0.030000 left; this call may cost up to ${usd(WORST)}. Top up with: flotilla budget ${g.id} --add <USD> (flotilla budget ${g.id} says the least that resumes this job)`,
      );
    }
    // both short, G has least room: C $0.02 left (0.10 − 0.07 − G's 0.01), G $0.01 left (0.02 − 0.01)
    {
      const { r, c, g, gToken } = await tree(store, 10_000_000, 100_000, 20_000);
      await spend(store, r.id, c.id, 70_000);
      await spend(store, r.id, g.id, 10_000);
      expect(await refusal(gToken, g)).toBe(
        `budget exhausted: job ${g.id}'s budget (sub-limit in job tree ${r.id}) is $0.020000, $0.010000 spent and $0.000000 reserved by calls in flight, ` +
          `$0.010000 left; this call may cost up to ${usd(WORST)}. Also short: job ${c.id}'s budget ($0.020000 left of $0.100000). ` +
          `Top up with: flotilla budget ${c.id} --add <USD>, then flotilla budget ${g.id} --add <USD> (2 budgets are short: one alone is not enough)`,
      );
    }
    // both short, C has least room: C $0.015 left, G $0.03
    {
      const { r, c, g, gToken } = await tree(store, 10_000_000, 100_000, 30_000);
      await spend(store, r.id, c.id, 85_000);
      expect(await refusal(gToken, g)).toBe(
        `budget exhausted: job ${c.id}'s budget (sub-limit in job tree ${r.id}, shared by job ${g.id}) is $0.100000, $0.085000 spent and $0.000000 reserved by calls in flight, ` +
          `$0.015000 left; this call may cost up to ${usd(WORST)}. Also short: job ${g.id}'s budget ($0.030000 left of $0.030000). ` +
          `Top up with: flotilla budget ${c.id} --add <USD>, then flotilla budget ${g.id} --add <USD> (2 budgets are short: one alone is not enough)`,
      );
    }
    // the tree ($0.03 left) and G's sub-limit ($0.02) short, C's ($0.20) not: G named, the tree listed
    {
      const { r, g, gToken } = await tree(store, 100_000, 200_000, 20_000);
      await spend(store, r.id, undefined, 70_000);
      expect(await refusal(gToken, g)).toBe(
        `budget exhausted: job ${g.id}'s budget (sub-limit in job tree ${r.id}) is $0.020000, $0.000000 spent and $0.000000 reserved by calls in flight, ` +
          `$0.020000 left; this call may cost up to ${usd(WORST)}. Also short: job tree ${r.id}'s budget ($0.030000 left of $0.100000). ` +
          `Top up with: flotilla budget ${r.id} --add <USD>, then flotilla budget ${g.id} --add <USD> (2 budgets are short: one alone is not enough)`,
      );
    }
    expect(up.seen.length).toBe(0);
  } finally {
    await gw.close();
    await up.close();
  }
}

describe('the refusal names the budget that refused a grandchild with its own sub-limit under a sub-limited child', () => {
  it('on SQLite', () => onSqlite(run));
  it('two gateways over one PostgreSQL', (ctx) => onTwoPostgres(run, () => ctx.skip()));
});

describe('the refusal of several short budgets (pure)', () => {
  // C's room is held only by calls in flight; G's own sub-limit is really spent
  const tree = { rootId: 1, limitMicros: 10_000_000, spentMicros: 0, reservedMicros: 0, remainingMicros: 10_000_000 };
  const c = { rootId: 1, jobId: 2, limitMicros: 100_000, spentMicros: 0, reservedMicros: 97_000, remainingMicros: 3_000 };
  const g = { rootId: 1, jobId: 3, limitMicros: 20_000, spentMicros: 15_000, reservedMicros: 0, remainingMicros: 5_000 };

  it('names the short budget with least room and lists every short one, top down', () => {
    expect(refusingBudget([tree, c, g], 8_000)).toEqual({ ...c, shortOnPath: [c, g] });
    expect(refusingBudget([tree, c, g], 4_000)).toEqual(c); // only C short: no list
    expect(refusingBudget([tree, c, g], 3_000)).toBeNull(); // everything fits (money given back meanwhile)
  });

  it('is a refusal for budget, not a wait for calls in flight, when one short budget is really spent', () => {
    const refused = refusingBudget([tree, c, g], 8_000);
    expect(refusedByCallsInFlight(refused, 8_000)).toBe(false);
    // only C short: its spent + the call fit, only the calls in flight keep it out
    expect(refusedByCallsInFlight(refusingBudget([tree, c, g], 4_000), 4_000)).toBe(true);
  });
});
