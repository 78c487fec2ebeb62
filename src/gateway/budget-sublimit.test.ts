/**
 * Issue 6, end to end over HTTP and a real SQLite store: a child job with a $0.10 sub-limit in
 * a $10 tree. Its calls reserve against the sub-limit too: of 6 concurrent calls whose worst
 * case is ~$0.04 each, 2 reach the upstream and 4 get the provider-shaped budget error naming
 * the child's budget and what is left; the gateway reports the child for the budget pause;
 * the root's calls still fit the tree. Settling charges both the tree and the sub-limit.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { hashToken } from '../core/tokens.js';
import { openSqliteStore } from '../store/open.js';
import type { JobRow } from '../store/types.js';
import { createGateway } from './gateway.js';
import type { PriceTable } from './prices.js';
import { listen } from './test-server.js';

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

const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

it('a child with a $0.10 sub-limit in a $10 tree: its calls stop at the sub-limit, the root still fits', async () => {
  let seen = 0;
  let release!: () => void;
  const released = new Promise<void>((r) => (release = r));
  const upstream: Server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      seen += 1;
      void released.then(() => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify(REPLY));
      });
    });
  });
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
  const dir = mkdtempSync(join(tmpdir(), 'flotilla-sublimit-'));
  dirs.push(dir);
  const store = await openSqliteStore(join(dir, 'flotilla.db'));
  const exhausted: Array<[number, string]> = [];
  const app = createGateway({
    store,
    // M2: a call kept out only by calls in flight is answered at once (no wait) with the retryable 429
    config: { provider: 'anthropic', anthropicApiKey: 'sk-up', anthropicBaseUrl: `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`, prices: PRICES, budgetWaitMs: 0 },
    scriptFor: async () => null,
    onBudgetExhausted: async (job: JobRow, message: string) => void exhausted.push([job.id, message]),
  });
  const gw = await listen(app.fetch);
  try {
    const now = Date.now();
    const runner = await store.createRunner({ name: 'r', labels: {}, capacity: 2, credentialHash: 'c'.repeat(64), now });
    const root = await store.createJob({ parentId: null, agent: 'a', agentVersion: '1', input: {}, selector: {}, priority: 0, budgetMicros: 10_000_000, now });
    expect((await store.claimJob({ id: runner.id, labels: {} }, hashToken(ROOT_TOKEN), now))?.id).toBe(root.id);
    await store.transitionJob(root.id, 1, ['assigned'], 'running', now, { startedAt: now });
    const child = await store.createJob({ parentId: root.id, agent: 'a', agentVersion: '1', input: {}, selector: {}, priority: 0, budgetMicros: 100_000, now });
    expect((await store.claimJob({ id: runner.id, labels: {} }, hashToken(CHILD_TOKEN), now))?.id).toBe(child.id);
    await store.transitionJob(child.id, 1, ['assigned'], 'running', now, { startedAt: now });
    expect(2 * WORST).toBeLessThanOrEqual(100_000);
    expect(3 * WORST).toBeGreaterThan(100_000);

    const post = (token: string) =>
      fetch(gw.url + '/v1/messages', { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': token }, body: BODY }).then(async (r) => ({ status: r.status, body: await r.text() }));
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
    expect(seen).toBe(2);
    expect(await store.getJobBudget(child.id, Date.now())).toMatchObject({ reservedMicros: 2 * WORST, remainingMicros: left });
    // the tree has room for the root's own call while the child's are held
    const rootCall = post(ROOT_TOKEN);
    await expect.poll(() => seen, { timeout: 60_000, interval: 50 }).toBe(3);
    release();
    const all = [...(await Promise.all(calls)), await rootCall];
    expect(all.filter((x) => x.status === 200)).toHaveLength(3);
    expect(await store.getJobBudget(child.id, Date.now())).toEqual({ rootId: root.id, jobId: child.id, limitMicros: 100_000, spentMicros: 2 * 1_530, reservedMicros: 0, remainingMicros: 100_000 - 2 * 1_530 });
    expect(await store.getTreeBudget(root.id, Date.now())).toEqual({ rootId: root.id, limitMicros: 10_000_000, spentMicros: 3 * 1_530, reservedMicros: 0, remainingMicros: 10_000_000 - 3 * 1_530 });
  } finally {
    release();
    await gw.close();
    await new Promise<void>((r) => upstream.close(() => r()));
    await store.close();
  }
});
