/**
 * A JSON reply and its ledger write (meter.ts, store types.ts `writesInTurnOrder`):
 * - on the SQLite store the reply goes out without waiting for the settle's commit, and every
 *   later request still sees the call settled: 10 calls one after another, each charged
 *   1,000 input × $2/M + 500 output × $10/M = 7,000 µ$, in a tree whose budget leaves room for
 *   the next call's worst case only once the previous call's worst case is released (a held
 *   one would refuse the 10th call); after each reply, the tree reads spent 7,000 × n,
 *   reserved 0, and the job's ledger n calls;
 * - on a store without the flag the reply waits for the settle (a gated settle holds it back);
 *   with the flag it does not.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { hashToken } from '../core/tokens.js';
import { openStore } from '../store/open.js';
import type { NewModelCall, Store } from '../store/types.js';
import { MemoryGatewayStore } from './memory-store.js';
import type { PriceTable } from './prices.js';
import { price } from './test-metering.js';
import { startGateway } from './test-server.js';

const PRICES: PriceTable = { version: 't', models: { 'claude-x': price(2, 10, 2, 2, 1) }, default: price(1000, 1000, 1000, 1000, 1000) };
const REPLY = { body: JSON.stringify({ id: 'msg_1', type: 'message', role: 'assistant', model: 'claude-x', content: [{ type: 'text', text: 'ok' }], stop_reason: 'end_turn', usage: { input_tokens: 1000, output_tokens: 500 } }) };
const BODY = JSON.stringify({ model: 'claude-x', max_tokens: 2000, messages: [{ role: 'user', content: 'hi' }] });
const COST = 1000 * 2 + 500 * 10;
/** The worst case the gateway reserves (worst-case.ts): ⌈body bytes / 3⌉ input tokens × 2 µ$ + max_tokens × 10 µ$. */
const WORST = Math.ceil(Buffer.byteLength(BODY) / 3) * 2 + 2000 * 10;

const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

describe('a JSON reply and its settle', () => {
  it('SQLite: the store says writes are in turn order; 10 calls in a row each find the previous one settled, and so does a read right after each reply', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'flotilla-settle-turn-'));
    dirs.push(dir);
    const store = await openStore({ dataDir: dir });
    expect(store.writesInTurnOrder).toBe(true);
    const now = Date.now();
    const runner = await store.createRunner({ name: 'r', labels: {}, capacity: 1, credentialHash: 'c'.repeat(64), now });
    // Room for 9 settled calls and one more worst case, less than a second worst case on top.
    const limit = 9 * COST + WORST + Math.floor((WORST - COST) / 2);
    const job = await store.createJob({ parentId: null, agent: 'a', agentVersion: '1', input: {}, selector: {}, priority: 0, budgetMicros: limit, now });
    const token = 'flj_settle_' + 'x'.repeat(32);
    await store.claimJob({ id: runner.id, labels: {} }, hashToken(token), now);
    await store.transitionJob(job.id, 1, ['assigned'], 'running', now, { startedAt: now });
    const gw = await startGateway<Store>({ store, config: { prices: PRICES } });
    try {
      gw.setReply(REPLY);
      for (let n = 1; n <= 10; n++) {
        const res = await gw.post('/v1/messages', BODY, { token, headers: { 'anthropic-version': '2023-06-01' } });
        expect([n, res.status]).toEqual([n, 200]);
        const budget = await store.getTreeBudget(job.id, Date.now());
        expect([n, budget?.spentMicros, budget?.reservedMicros]).toEqual([n, COST * n, 0]);
        expect([n, await store.jobUsage(job.id)]).toEqual([n, expect.objectContaining({ modelCalls: n, inputTokens: 1000 * n, outputTokens: 500 * n, costMicros: COST * n })]);
        await res.arrayBuffer();
      }
    } finally {
      await gw.close();
      await store.close();
    }
  });

  it('the reply waits for a settle that has not finished, unless the store says writes are in turn order', async () => {
    for (const inTurn of [false, true]) {
      let open!: () => void;
      const gate = new Promise<void>((r) => (open = r));
      class GatedStore extends MemoryGatewayStore {
        readonly writesInTurnOrder = inTurn;
        override async settleBudget(rootId: number, reservationId: number, costMicros: number, now = 0, call?: NewModelCall): Promise<boolean> {
          await gate;
          return super.settleBudget(rootId, reservationId, costMicros, now, call);
        }
      }
      const store = new GatedStore();
      const gw = await startGateway({ store, job: { token: 'flj_gated' }, config: { prices: PRICES } });
      try {
        gw.setReply(REPLY);
        const reply = gw.post('/v1/messages', BODY, { headers: { 'anthropic-version': '2023-06-01' } }).then((r) => r.status);
        const early = await Promise.race([reply, new Promise((r) => setTimeout(() => r('held'), 300))]);
        expect([inTurn, early]).toEqual([inTurn, inTurn ? 200 : 'held']);
        expect(store.calls).toEqual([]); // the row waits for the gate either way
        open();
        expect(await reply).toBe(200);
        await new Promise((r) => setTimeout(r, 20));
        expect(store.calls).toEqual([expect.objectContaining({ inputTokens: 1000, outputTokens: 500, costMicros: COST })]);
      } finally {
        await gw.close();
      }
    }
  });
});
