/**
 * Issue 6, end to end over HTTP and a real SQLite store: a child job with a $0.10 sub-limit in
 * a $10 tree. Its calls reserve against the sub-limit too: of 6 concurrent calls whose worst
 * case is ~$0.04 each, 2 reach the upstream and 4 get the provider-shaped budget error naming
 * the child's budget and what is left; the gateway reports the child for the budget pause;
 * the root's calls still fit the tree. Settling charges both the tree and the sub-limit.
 */
import { expect, it } from 'vitest';
import type { JobRow } from '../store/types.js';
import type { PriceTable } from './prices.js';
import { startGateway } from './test-server.js';
import { onSqlite, runningJob } from './test-stores.js';
import { heldUpstream } from './test-upstream.js';

const PRICE = { input: 3, output: 15, cacheWrite5m: 3.75, cacheWrite1h: 6, cacheRead: 0.3 };
const PRICES: PriceTable = { version: 'test', models: { 'test-model': PRICE }, default: PRICE };
const ROOT_TOKEN = 'flj_sublimit_root_0123456789abcdef';
const CHILD_TOKEN = 'flj_sublimit_child_0123456789abcde';
const MAX_TOKENS = 2600;
const BODY = JSON.stringify({ model: 'test-model', max_tokens: MAX_TOKENS, messages: [{ role: 'user', content: 'hello' }] });
// Worked out independently of gateway/budget.ts: ⌈bytes/3⌉ input tokens at 6 µ$ + 2,600 × 15 µ$.
const WORST = Math.ceil(Buffer.byteLength(BODY) / 3) * 6 + MAX_TOKENS * 15;
// Upstream usage: 10 input, 100 output = 30 + 1,500 = 1,530 µ$.
const REPLY = { id: 'msg_x', type: 'message', role: 'assistant', model: 'test-model', content: [{ type: 'text', text: 'ok' }], stop_reason: 'end_turn', usage: { input_tokens: 10, output_tokens: 100 } };

it('a child with a $0.10 sub-limit in a $10 tree: its calls stop at the sub-limit, the root still fits', () => onSqlite(async (stores) => {
  const store = stores[0]!;
  const up = await heldUpstream({ body: JSON.stringify(REPLY) });
  const exhausted: Array<[number, string]> = [];
  const gw = await startGateway({
    upstream: up,
    store: store,
    via: 'fetch',
    // M2: a call kept out only by calls in flight is answered at once (no wait) with the retryable 429
    config: { prices: PRICES, budgetWaitMs: 0 },
    onBudgetExhausted: async (job: JobRow, message: string) => void exhausted.push([job.id, message]),
  });
  try {
    const root = await runningJob(store, ROOT_TOKEN, { budgetMicros: 10_000_000 });
    const child = await runningJob(store, CHILD_TOKEN, { budgetMicros: 100_000, parentId: root.id });
    expect(2 * WORST).toBeLessThanOrEqual(100_000);
    expect(3 * WORST).toBeGreaterThan(100_000);

    const post = (token: string) => gw.post('/v1/messages', BODY, { token }).then(async (r) => ({ status: r.status, body: await r.text() }));
    const calls = Array.from({ length: 6 }, () => post(CHILD_TOKEN));
    const settled: Array<{ status: number; body: string }> = [];
    for (const c of calls) void c.then((x) => settled.push(x));
    await expect.poll(() => settled.length, { timeout: 60_000, interval: 50 }).toBe(4);
    // the sub-limit's spent (0) + a call's worst case fit: only the 2 calls in flight keep the
    // others out, so they get the retryable 429 and the child is not paused (M2)
    expect(settled.every((x) => x.status === 429)).toBe(true);
    const left = 100_000 - 2 * WORST;
    const msg = (JSON.parse(settled[0]!.body) as { error: { type: string; message: string } }).error;
    expect(msg.type).toBe('rate_limit_error');
    expect(msg.message).toContain(`job ${child.id}'s budget (sub-limit in job tree ${root.id}) of $0.100000: $0.000000 spent, $${((2 * WORST) / 1e6).toFixed(6)} held by calls in flight`);
    expect(exhausted).toEqual([]);
    expect(up.seen.length).toBe(2);
    expect(await store.getJobBudget(child.id, Date.now())).toMatchObject({ reservedMicros: 2 * WORST, remainingMicros: left });
    // the tree has room for the root's own call while the child's are held
    const rootCall = post(ROOT_TOKEN);
    await expect.poll(() => up.seen.length, { timeout: 60_000, interval: 50 }).toBe(3);
    up.release();
    const all = [...(await Promise.all(calls)), await rootCall];
    expect(all.filter((x) => x.status === 200)).toHaveLength(3);
    expect(await store.getJobBudget(child.id, Date.now())).toEqual({ rootId: root.id, jobId: child.id, limitMicros: 100_000, spentMicros: 2 * 1_530, reservedMicros: 0, remainingMicros: 100_000 - 2 * 1_530 });
    expect(await store.getTreeBudget(root.id, Date.now())).toEqual({ rootId: root.id, limitMicros: 10_000_000, spentMicros: 3 * 1_530, reservedMicros: 0, remainingMicros: 10_000_000 - 3 * 1_530 });
  } finally {
    up.release();
    await gw.close();
    await up.close();
  }
}));
