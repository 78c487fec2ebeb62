/**
 * Issue 3's concurrency test: a tree with a $1.00 budget and $0.90 spent; 10 calls at once
 * whose worst case is ~$0.04 each and whose upstream holds them: at most 2 reach the upstream,
 * the others are refused while those 2 are still in flight, and the final spend stays ≤ $1.00.
 * The tree is not out of money (spent + one worst case fit), so the refusal is the retryable
 * 429 (M2, budget-wait.ts; here without the wait, budgetWaitMs 0), not the budget error. Once with one gateway over SQLite, once with two gateways (two store instances,
 * two ports: two "processes") over one PostgreSQL database.
 */
import { describe, expect, it } from 'vitest';
import type { Store } from '../store/types.js';
import type { PriceTable } from './prices.js';
import { onSqlite, onTwoPostgres, runningJob } from './test-stores.js';
import { startGateway } from './test-server.js';
import { heldUpstream } from './test-upstream.js';

const PRICE = { input: 3, output: 15, cacheWrite5m: 3.75, cacheWrite1h: 6, cacheRead: 0.3 };
const PRICES: PriceTable = { version: 'test', models: { 'test-model': PRICE }, default: PRICE };
const TOKEN = 'flj_concurrency_0123456789abcdef';
const MAX_TOKENS = 2600;
const BODY = JSON.stringify({ model: 'test-model', max_tokens: MAX_TOKENS, messages: [{ role: 'user', content: 'hello' }] });
// Worked out independently of gateway/budget.ts: ⌈bytes/3⌉ input tokens at the highest
// input-side rate ($6/MTok = 6 µ$/token) + 2,600 output tokens at 15 µ$.
const WORST = Math.ceil(Buffer.byteLength(BODY) / 3) * 6 + MAX_TOKENS * 15;
// Upstream usage: 10 input, 100 output = 30 + 1,500 = 1,530 µ$.
const REPLY = { id: 'msg_x', type: 'message', role: 'assistant', model: 'test-model', content: [{ type: 'text', text: 'ok' }], stop_reason: 'end_turn', usage: { input_tokens: 10, output_tokens: 100 } };

describe('budgets under concurrency', () => {
  async function run(stores: Store[]) {
    const up = await heldUpstream({ body: JSON.stringify(REPLY) });
    const gws = await Promise.all(stores.map((store) => startGateway({ upstream: up, store, via: 'fetch', config: { prices: PRICES, budgetWaitMs: 0 } })));
    try {
      // a root job with $1.00 budget, $0.90 already spent, running with TOKEN
      const rootId = (await runningJob(stores[0]!, TOKEN, { budgetMicros: 1_000_000, spentMicros: 900_000 })).id;
      expect(WORST).toBeLessThanOrEqual(40_000);
      expect(2 * WORST).toBeLessThanOrEqual(100_000); // two fit in the $0.10 left ...
      expect(3 * WORST).toBeGreaterThan(100_000); // ... three do not
      const calls = Array.from({ length: 10 }, (_, i) =>
        gws[i % gws.length]!.post('/v1/messages', BODY, { token: TOKEN }).then(async (r) => ({ status: r.status, body: await r.text() })),
      );
      // The 8 refusals arrive while the 2 admitted calls are still held upstream (it holds
      // them until release(), however long this takes on a loaded machine).
      const settled: Array<{ status: number; body: string }> = [];
      for (const c of calls) void c.then((x) => settled.push(x));
      await expect.poll(() => settled.length, { timeout: 60_000, interval: 50 }).toBe(8);
      const early = [...settled];
      expect(early.every((x) => x!.status === 429 && /"rate_limit_error".*budget busy/.test(x!.body))).toBe(true);
      expect(up.seen.length).toBe(2);
      const during = await stores[0]!.getTreeBudget(rootId, Date.now());
      expect(during).toMatchObject({ spentMicros: 900_000, reservedMicros: 2 * WORST });
      up.release();
      const all = await Promise.all(calls);
      expect(all.filter((x) => x.status === 200)).toHaveLength(2);
      expect(up.seen.length).toBe(2);
      const after = await stores[0]!.getTreeBudget(rootId, Date.now());
      expect(after).toEqual({ rootId, limitMicros: 1_000_000, spentMicros: 900_000 + 2 * 1_530, reservedMicros: 0, remainingMicros: 100_000 - 2 * 1_530 });
      const usage = await stores[0]!.jobUsage(rootId);
      expect(usage).toMatchObject({ modelCalls: 2, costMicros: 2 * 1_530 }); // the 8 refused made no call
      const refused = await stores[0]!.costRollup({ by: 'job', since: 0 });
      expect(refused[0]).toMatchObject({ calls: 10, refusedCalls: 8 });
    } finally {
      up.release();
      await Promise.all(gws.map((g) => g.close()));
      await up.close();
    }
  }

  it('one gateway over SQLite: 2 of 10 reach the upstream, spend stays ≤ $1.00', () => onSqlite(run));

  it('two gateways (two store instances) over one PostgreSQL: 2 of 10 reach the upstream', (ctx) => onTwoPostgres(run, () => ctx.skip()));
});
