/**
 * Issue 3's concurrency test: a tree with a $1.00 budget and $0.90 spent; 10 calls at once
 * whose worst case is ~$0.04 each and whose upstream holds them: at most 2 reach the upstream,
 * the others are refused while those 2 are still in flight, and the final spend stays ≤ $1.00.
 * The tree is not out of money (spent + one worst case fit), so the refusal is the retryable
 * 429 (M2, budget-wait.ts; here without the wait, budgetWaitMs 0), not the budget error. Once with one gateway over SQLite, once with two gateways (two store instances,
 * two ports: two "processes") over one PostgreSQL database.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { hashToken } from '../core/tokens.js';
import type { Store } from '../store/types.js';
import { createGateway } from './gateway.js';
import type { PriceTable } from './prices.js';
import { onSqlite, onTwoPostgres } from './test-stores.js';
import { listen } from './test-server.js';

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

/** A fake Anthropic upstream that holds every request until `release()`. */
async function heldUpstream() {
  let seen = 0;
  let release!: () => void;
  const released = new Promise<void>((r) => (release = r));
  const server: Server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      seen += 1;
      void released.then(() => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify(REPLY));
      });
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    seen: () => seen,
    release,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

/** A root job with $1.00 budget, $0.90 already spent, running with TOKEN. */
async function spentTree(store: Store): Promise<number> {
  const now = Date.now();
  const runner = await store.createRunner({ name: 'r', labels: {}, capacity: 1, credentialHash: 'c'.repeat(64), now });
  const job = await store.createJob({ parentId: null, agent: 'a', agentVersion: '1', input: {}, selector: {}, priority: 0, budgetMicros: 1_000_000, now });
  await store.claimJob({ id: runner.id, labels: {} }, hashToken(TOKEN), now);
  await store.transitionJob(job.id, 1, ['assigned'], 'running', now, { startedAt: now });
  const held = await store.reserveBudget(job.id, 900_000, now);
  if (!held?.ok) throw new Error('the first reservation must fit');
  await store.settleBudget(job.id, held.reservationId, 900_000, now);
  return job.id;
}

describe('budgets under concurrency', () => {

  async function run(stores: Store[]) {
    const up = await heldUpstream();
    const gws = await Promise.all(stores.map(async (s) => {
      const app = createGateway({ store: s, config: { provider: 'anthropic', anthropicApiKey: 'sk-up', anthropicBaseUrl: up.url, prices: PRICES, budgetWaitMs: 0 }, scriptFor: async () => null });
      return listen(app.fetch);
    }));
    try {
      const rootId = await spentTree(stores[0]!);
      expect(WORST).toBeLessThanOrEqual(40_000);
      expect(2 * WORST).toBeLessThanOrEqual(100_000); // two fit in the $0.10 left ...
      expect(3 * WORST).toBeGreaterThan(100_000); // ... three do not
      const calls = Array.from({ length: 10 }, (_, i) =>
        fetch(gws[i % gws.length]!.url + '/v1/messages', { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': TOKEN }, body: BODY }).then(async (r) => ({ status: r.status, body: await r.text() })),
      );
      // The 8 refusals arrive while the 2 admitted calls are still held upstream (it holds
      // them until release(), however long this takes on a loaded machine).
      const settled: Array<{ status: number; body: string }> = [];
      for (const c of calls) void c.then((x) => settled.push(x));
      await expect.poll(() => settled.length, { timeout: 60_000, interval: 50 }).toBe(8);
      const early = [...settled];
      expect(early.every((x) => x!.status === 429 && /"rate_limit_error".*budget busy/.test(x!.body))).toBe(true);
      expect(up.seen()).toBe(2);
      const during = await stores[0]!.getTreeBudget(rootId, Date.now());
      expect(during).toMatchObject({ spentMicros: 900_000, reservedMicros: 2 * WORST });
      up.release();
      const all = await Promise.all(calls);
      expect(all.filter((x) => x.status === 200)).toHaveLength(2);
      expect(up.seen()).toBe(2);
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
