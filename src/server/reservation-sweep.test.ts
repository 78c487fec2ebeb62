/**
 * H7: a gateway that dies mid-call leaves its reservation; the control plane's sweeper charges
 * it (the reserved worst case) as a call of unknown usage — a ledger row on the call's job — so
 * the tree's spend includes what the upstream probably billed; a settle that still comes (the
 * gateway was only hung) replaces that charge with the real one.
 * Prices: 3 / 15 / 3.75 / 6 / 0.3 µ$ per token; a call's worst case = ⌈body bytes / 3⌉ input
 * tokens × 6 (dearest input-side rate) + max_tokens × 15, worked out here from the body.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { silentLogger } from '../core/log.js';
import { hashToken } from '../core/tokens.js';
import { openPostgresStore, openStore } from '../store/open.js';
import { createTestDatabase } from '../store/test-pg.js';
import type { Store } from '../store/types.js';
import { EventBus } from './event-bus.js';
import { Sweeper } from './sweeper.js';
import { reserve } from '../gateway/budget.js';
import { createGateway } from '../gateway/gateway.js';
import type { PriceTable } from '../gateway/prices.js';

const T0 = 1_800_000_000_000;
const PRICE = { input: 3, output: 15, cacheWrite5m: 3.75, cacheWrite1h: 6, cacheRead: 0.3 };
const PRICES: PriceTable = { version: 'test', models: {}, default: PRICE };
const BODY = JSON.stringify({ model: 'claude-sonnet-4-5', max_tokens: 2_000, messages: [{ role: 'user', content: 'hello' }] });
const IN_TOKENS = Math.ceil(Buffer.byteLength(BODY) / 3);
const WORST = IN_TOKENS * 6 + 2_000 * 15;

/** A running root job with a $1.00 budget and job token `token`. */
async function runningJob(store: Store, token: string, now: number) {
  const runner = await store.createRunner({ name: 'r', labels: {}, capacity: 1, credentialHash: 'c'.repeat(64), now });
  const job = await store.createJob({ parentId: null, agent: 'a', agentVersion: '1', input: {}, selector: {}, priority: 0, budgetMicros: 1_000_000, now });
  await store.claimJob({ id: runner.id, labels: {} }, hashToken(token), now);
  await store.transitionJob(job.id, 1, ['assigned'], 'running', now, { startedAt: now });
  return (await store.findJobByTokenHash(hashToken(token)))!;
}

const sweeperAt = (store: Store, now: () => number) => new Sweeper({ store, bus: new EventBus(), log: silentLogger, now, timeoutMs: 20_000, intervalMs: 1000, startedAt: T0 });

/** A fake Anthropic upstream that holds every call until `release()`; usage 10 in, 100 out (30 + 1,500 = 1,530 µ$). */
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
        res.end(JSON.stringify({ id: 'm', type: 'message', role: 'assistant', model: 'claude-sonnet-4-5', content: [{ type: 'text', text: 'ok' }], stop_reason: 'end_turn', usage: { input_tokens: 10, output_tokens: 100 } }));
      });
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    seen: () => seen,
    release,
    close: () => {
      (server as unknown as { closeAllConnections(): void }).closeAllConnections();
      return new Promise<void>((r) => server.close(() => r()));
    },
  };
}

/** A gateway over HTTP on `store` (reservations held 60 s, kept alive while the call runs). */
async function gatewayOn(store: Store, upstreamUrl: string) {
  const app = createGateway({ store, config: { provider: 'anthropic', anthropicApiKey: 'sk-up', anthropicBaseUrl: upstreamUrl, prices: PRICES, reservationTtlMs: 60_000 }, scriptFor: async () => null });
  const gw = createServer(app.node);
  await new Promise<void>((r) => gw.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(gw.address() as AddressInfo).port}/v1/messages`;
  return {
    call: (token: string, signal?: AbortSignal) => fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': token }, body: BODY, ...(signal ? { signal } : {}) }),
    close: () => {
      gw.closeAllConnections();
      return new Promise<void>((r) => gw.close(() => r()));
    },
  };
}

describe('a gateway that dies mid-call (H7)', () => {
  it("leaves a reservation that the control plane's sweeper charges after its expiry, as a call of unknown usage on its job: the tree's spend includes it", async () => {
    const dir = await mkdtemp(join(tmpdir(), 'flotilla-res-sweep-'));
    const store = await openStore({ dataDir: dir });
    try {
      const running = await runningJob(store, 'flj_t', T0);
      // The "dying" gateway reserves $0.95 for a call (60 s expiry) and never settles.
      const call = { jobId: running.id, attempt: 1, provider: 'anthropic', model: 'claude-sonnet-4-5', api: 'anthropic-messages', streamed: true, runnerId: running.runnerId, inputTokens: 20_000, outputTokens: 50_000 };
      const held = await reserve(store, running, 950_000, T0, 60_000, undefined, call);
      expect('refused' in held).toBe(false);
      let now = T0 + 59_999;
      const sweeper = sweeperAt(store, () => now);
      await sweeper.sweepOnce();
      expect(await store.getTreeBudget(running.id, now)).toMatchObject({ spentMicros: 0, reservedMicros: 950_000, remainingMicros: 50_000 });
      expect((await store.jobUsage(running.id)).modelCalls).toBe(0);
      now += 1; // expired
      await sweeper.sweepOnce();
      // charged, not given back: $0.95 spent, $0.05 left
      expect(await store.getTreeBudget(running.id, now)).toEqual({ rootId: running.id, limitMicros: 1_000_000, spentMicros: 950_000, reservedMicros: 0, remainingMicros: 50_000 });
      expect(await store.jobUsage(running.id)).toMatchObject({ modelCalls: 1, estimatedCalls: 1, costMicros: 950_000, inputTokens: 20_000, outputTokens: 50_000 });
      await sweeper.sweepOnce();
      expect((await store.jobUsage(running.id)).costMicros).toBe(950_000); // once only
      const more = await reserve(store, running, 50_001, now);
      expect('refused' in more && more.refused).toMatch(/\$0\.050000 left/);
    } finally {
      await store.close();
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('PostgreSQL, a real gateway cut off mid-call (its store closed, as a killed process leaves it): another replica\'s sweep records the call with the reserved worst case', async (ctx) => {
    const db = await createTestDatabase();
    if (!db) return ctx.skip();
    const gatewayStore = await openPostgresStore(db.url, { maxConnections: 2 });
    const plane = await openPostgresStore(db.url, { maxConnections: 2 });
    const up = await heldUpstream();
    const gw = await gatewayOn(gatewayStore, up.url);
    const client = new AbortController();
    try {
      const job = await runningJob(plane, 'flj_pg_dies', Date.now());
      const pending = gw.call('flj_pg_dies', client.signal).catch(() => null);
      await expect.poll(() => up.seen(), { timeout: 10_000 }).toBe(1);
      expect(await plane.getTreeBudget(job.id, Date.now())).toMatchObject({ spentMicros: 0, reservedMicros: WORST });
      // The gateway process "dies": its database connections go, it never settles.
      await gatewayStore.close();
      client.abort();
      await pending;
      // past the reservation's expiry (the gateway's keep-alive moved it at most 60 s on)
      const later = Date.now() + 2 * 60_000;
      await sweeperAt(plane, () => later).sweepOnce();
      expect(await plane.getTreeBudget(job.id, later)).toMatchObject({ spentMicros: WORST, reservedMicros: 0 });
      expect(await plane.jobUsage(job.id)).toMatchObject({ modelCalls: 1, estimatedCalls: 1, costMicros: WORST, inputTokens: IN_TOKENS, outputTokens: 2_000 });
    } finally {
      up.release();
      await gw.close();
      await up.close();
      await plane.close();
      await gatewayStore.close().catch(() => undefined);
      await db.drop();
    }
  });

  it('a gateway that was only hung settles late: its real cost replaces the sweep\'s charge and row (the call counts once)', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'flotilla-res-late-'));
    const store = await openStore({ dataDir: dir });
    const up = await heldUpstream();
    const gw = await gatewayOn(store, up.url);
    try {
      const job = await runningJob(store, 'flj_late', Date.now());
      const res = gw.call('flj_late');
      await expect.poll(() => up.seen(), { timeout: 10_000 }).toBe(1);
      const later = Date.now() + 2 * 60_000;
      await sweeperAt(store, () => later).sweepOnce();
      expect(await store.getTreeBudget(job.id, later)).toMatchObject({ spentMicros: WORST, reservedMicros: 0 });
      expect(await store.jobUsage(job.id)).toMatchObject({ modelCalls: 1, estimatedCalls: 1, costMicros: WORST, inputTokens: IN_TOKENS, outputTokens: 2_000 });
      up.release();
      expect((await res).status).toBe(200);
      expect(await store.getTreeBudget(job.id, Date.now())).toMatchObject({ spentMicros: 1_530, reservedMicros: 0 });
      expect(await store.jobUsage(job.id)).toMatchObject({ modelCalls: 1, estimatedCalls: 0, costMicros: 1_530, inputTokens: 10, outputTokens: 100 });
    } finally {
      up.release();
      await gw.close();
      await up.close();
      await store.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});
