import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import { silentLogger } from '../core/log.js';
import { hashToken } from '../core/tokens.js';
import { createGateway } from '../gateway/gateway.js';
import type { PriceTable } from '../gateway/prices.js';
import { onSqlite } from '../gateway/test-stores.js';
import { openSqliteStore } from '../store/open.js';
import type { Store } from '../store/types.js';
import type { AgentRegistry } from './agents.js';
import { budgetPauser, resumeHoldEnder } from './budget-pause.js';
import { EventBus } from './event-bus.js';

const dir = mkdtempSync(join(tmpdir(), 'flotilla-pause-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

it('pauses a running job unless its agent says onBudgetExhausted: fail; leaves a status event', async () => {
  const store = await openSqliteStore(join(dir, 'db'));
  try {
    const now = Date.now();
    const runner = await store.createRunner({ name: 'r', labels: {}, capacity: 2, credentialHash: 'c'.repeat(64), now });
    const mk = async (agent: string, hash: string) => {
      const j = await store.createJob({ parentId: null, agent, agentVersion: '1', input: {}, selector: {}, priority: 0, budgetMicros: 1, now });
      await store.claimJobById(j.id, { id: runner.id, labels: {} }, hash, now);
      return (await store.transitionJob(j.id, 1, ['assigned'], 'running', now))!;
    };
    const pausing = await mk('pauser', 'a'.repeat(64));
    const failing = await mk('failer', 'b'.repeat(64));
    const agents = { get: (name: string) => ({ onBudgetExhausted: name === 'failer' ? 'fail' : 'pause' }) } as unknown as AgentRegistry;
    const sent: Array<[number, unknown]> = [];
    const stop = async (runnerId: number, msg: unknown) => (sent.push([runnerId, msg]), true);
    const hook = budgetPauser({ store, agents, bus: new EventBus(), log: silentLogger, now: () => now, stop });
    await hook(pausing, 'budget exhausted: job tree 1 ...');
    await hook(failing, 'budget exhausted: job tree 2 ... Top up with: flotilla budget 2 --add 1');
    expect(await store.getJob(pausing.id)).toMatchObject({ status: 'paused', endReason: 'budget', error: 'budget exhausted: job tree 1 ...' });
    // fail: not paused; its runner is told to end the attempt failed `budget` (the report ends the job), no top-up advice
    expect(await store.getJob(failing.id)).toMatchObject({ status: 'running' });
    expect(sent).toEqual([
      [runner.id, { type: 'job.cancel', jobId: pausing.id, attempt: 1, reason: 'paused for budget', pause: true }],
      [runner.id, { type: 'job.cancel', jobId: failing.id, attempt: 1, reason: 'budget exhausted: job tree 2 ... The job failed: its agent says onBudgetExhausted: fail.', fail: true }],
    ]);
    const evs = await store.listEvents(pausing.id, 0, 10);
    expect(evs.at(-1)).toMatchObject({ type: 'status', data: { status: 'paused', message: 'budget exhausted: job tree 1 ...' } });
  } finally {
    await store.close();
  }
});

// A top-up that commits between the gateway's refusal and the pause finds no paused job to
// resume; the pause then checks the resume rule itself (fresh-user finding: 6 of 36 such races
// on two replicas left the job paused with room, until a second top-up).
describe('a top-up landing between a refusal and its pause', () => {
  /** A running job (tree budget 10,000 µ$, 9,000 spent) and the pause hook; `topUp` µ$ are added before the hook runs. */
  async function raced(store: Store, topUp: number, needMicros: number) {
    const now = Date.now();
    const runner = await store.createRunner({ name: `r${topUp}-${needMicros}`, labels: {}, capacity: 1, credentialHash: 'd'.repeat(64), now });
    const j = await store.createJob({ parentId: null, agent: 'a', agentVersion: '1', input: {}, selector: {}, priority: 0, budgetMicros: 10_000, now });
    await store.claimJobById(j.id, { id: runner.id, labels: {} }, hashToken(`flj_race_${j.id}_0123456789abcdef`), now);
    const job = (await store.transitionJob(j.id, 1, ['assigned'], 'running', now, { startedAt: now, sessionId: 'sess-r' }))!;
    const held = await store.reserveBudget(j.id, 9_000, now);
    if (!held?.ok) throw new Error('the first reservation must fit');
    await store.settleBudget(j.id, held.reservationId, 9_000, now);
    // the refusal was decided (1,000 µ$ left < the call's worst case); then the top-up commits,
    // and its resumer finds nothing paused; then the pause is written
    if (topUp) await store.topUpBudget(j.id, topUp, now);
    const agents = { get: () => ({ onBudgetExhausted: 'pause' }) } as unknown as AgentRegistry;
    let kicks = 0;
    const hook = budgetPauser({ store, agents, bus: new EventBus(), log: silentLogger, now: () => now, kick: () => void kicks++ });
    await hook(job, `budget exhausted: this call may cost up to $0.00${needMicros}`, needMicros);
    return { id: j.id, kicks: () => kicks, now };
  }

  it('resumes the job when the tree now has room for the refused call: once its process has exited, in its session', () =>
    onSqlite(async ([store]) => {
      const r = await raced(store!, 5_000, 5_000); // 15,000 - 9,000 = 6,000 µ$ of room >= 5,000
      // the attempt's process still runs (the runner was told to stop it): the resume waits for its exit
      expect(await store!.getJob(r.id)).toMatchObject({ status: 'paused', endReason: 'budget_resume' });
      expect(r.kicks()).toBe(1); // as a top-up's resume does
      const evs = await store!.listEvents(r.id, 0, 20);
      expect(evs.filter((e) => e.type === 'status').map((e) => (e.data as { message: string }).message)).toEqual([
        expect.stringContaining('budget exhausted'),
        `job tree ${r.id}'s budget has room for the refused call (topped up while it was refused); resumes once the process of its attempt 1 has stopped`,
      ]);
      expect(await store!.endPausedAttempt(r.id, 1, r.now + 1)).toMatchObject({ status: 'queued', resumeSessionId: 'sess-r' });
    }));

  it('leaves the job paused when the top-up is still too small for the refused call', () =>
    onSqlite(async ([store]) => {
      const r = await raced(store!, 3_000, 5_000); // 13,000 - 9,000 = 4,000 µ$ < 5,000
      expect(await store!.getJob(r.id)).toMatchObject({ status: 'paused', endReason: 'budget' });
    }));

  it('leaves the job paused when no top-up came (1,000 µ$ left < 5,000)', () =>
    onSqlite(async ([store]) => {
      const r = await raced(store!, 0, 5_000);
      expect(await store!.getJob(r.id)).toMatchObject({ status: 'paused', endReason: 'budget' });
    }));
});

// --- a refusal caused only by calls in flight (M2, gateway/budget-wait.ts) ----------------
// Real gateway over HTTP and a real SQLite store, with the control plane's pause hook. Budget
// $1.00, $0.90 spent; each call's worst case ~$0.04 (two fit in the $0.10 left, three do not).
// Prices: input 3, output 15, cache writes 3.75/6 USD per MTok.

const PRICE = { input: 3, output: 15, cacheWrite5m: 3.75, cacheWrite1h: 6, cacheRead: 0.3 };
const PRICES: PriceTable = { version: 'test', models: { 'test-model': PRICE }, default: PRICE };
const TOKEN = 'flj_inflight_0123456789abcdefghij';
const MAX_TOKENS = 2600;
const BODY = JSON.stringify({ model: 'test-model', max_tokens: MAX_TOKENS, messages: [{ role: 'user', content: 'hello' }] });
// ⌈bytes/3⌉ input tokens at the highest input-side rate (6 µ$) + 2,600 output tokens at 15 µ$
const WORST = Math.ceil(Buffer.byteLength(BODY) / 3) * 6 + MAX_TOKENS * 15;

/** A fake Anthropic upstream holding every call until release(); replies with `outputTokens` used (10 input). */
async function heldUpstream(outputTokens: number) {
  let seen = 0;
  let release!: () => void;
  const released = new Promise<void>((r) => (release = r));
  const server: Server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      seen += 1;
      void released.then(() => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ id: 'm', type: 'message', role: 'assistant', model: 'test-model', content: [{ type: 'text', text: 'ok' }], stop_reason: 'end_turn', usage: { input_tokens: 10, output_tokens: outputTokens } }));
      });
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen: () => seen, release, close: () => new Promise<void>((r) => server.close(() => r())) };
}

/** A running root job (TOKEN) with `limit` µ$ of budget and `spent` µ$ spent, and the gateway over HTTP with the server's pause hook (calls in flight waited for 300 ms). */
async function setUp(store: Store, upstreamUrl: string, limit: number, spent: number) {
  const now = Date.now();
  const runner = await store.createRunner({ name: 'r', labels: {}, capacity: 1, credentialHash: 'c'.repeat(64), now });
  const job = await store.createJob({ parentId: null, agent: 'a', agentVersion: '1', input: {}, selector: {}, priority: 0, budgetMicros: limit, now });
  await store.claimJob({ id: runner.id, labels: {} }, hashToken(TOKEN), now);
  await store.transitionJob(job.id, 1, ['assigned'], 'running', now, { startedAt: now, sessionId: 'sess-1' });
  const held = await store.reserveBudget(job.id, spent, now);
  if (!held?.ok) throw new Error('the first reservation must fit');
  await store.settleBudget(job.id, held.reservationId, spent, now);
  const bus = new EventBus();
  const agents = { get: () => ({ onBudgetExhausted: 'pause' }) } as unknown as AgentRegistry;
  const app = createGateway({
    store,
    config: { provider: 'anthropic', anthropicApiKey: 'sk-up', anthropicBaseUrl: upstreamUrl, prices: PRICES, budgetWaitMs: 300 },
    scriptFor: async () => null,
    onBudgetExhausted: budgetPauser({ store, agents, bus, log: silentLogger, now: Date.now }),
  });
  const gw = createServer(app.node);
  await new Promise<void>((r) => gw.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(gw.address() as AddressInfo).port}/v1/messages`;
  const call = () => fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': TOKEN }, body: BODY }).then(async (r) => ({ status: r.status, retry: r.headers.get('x-should-retry'), body: await r.text() }));
  return { jobId: job.id, call, close: () => new Promise<void>((r) => gw.close(() => r())) };
}

describe('a call refused only because of calls in flight (M2)', () => {
  it('gets a retryable 429 and its job is not paused; once they settle its retry is served', () =>
    onSqlite(async ([store]) => {
      expect(2 * WORST).toBeLessThanOrEqual(100_000);
      expect(3 * WORST).toBeGreaterThan(100_000);
      const up = await heldUpstream(100); // 10 × 3 + 100 × 15 = 1,530 µ$ a call
      const gw = await setUp(store!, up.url, 1_000_000, 900_000);
      try {
        const inFlight = [gw.call(), gw.call()];
        await expect.poll(() => up.seen(), { timeout: 10_000 }).toBe(2);
        const third = await gw.call();
        expect(third.status).toBe(429);
        expect(third.retry).not.toBe('false');
        expect(third.body).toMatch(/rate_limit_error.*budget busy/);
        expect(await store!.getJob(gw.jobId)).toMatchObject({ status: 'running', endReason: null });
        up.release();
        expect((await Promise.all(inFlight)).map((x) => x.status)).toEqual([200, 200]);
        expect(await store!.getTreeBudget(gw.jobId, Date.now())).toMatchObject({ spentMicros: 900_000 + 2 * 1_530, reservedMicros: 0 });
        expect((await gw.call()).status).toBe(200); // the harness's retry
        expect(await store!.getJob(gw.jobId)).toMatchObject({ status: 'running' });
        expect(await store!.listEvents(gw.jobId, 0, 50)).not.toContainEqual(expect.objectContaining({ type: 'status', data: expect.objectContaining({ status: 'paused' }) }));
      } finally {
        up.release();
        await gw.close();
        await up.close();
      }
    }));

  it('a tree really out of money (spent + worst case over the limit) gets the 402 and its job is paused', () =>
    onSqlite(async ([store]) => {
      const up = await heldUpstream(1);
      const gw = await setUp(store!, up.url, 1_000_000, 990_000);
      try {
        const r = await gw.call();
        expect(r.status).toBe(402);
        expect(r.retry).toBe('false');
        expect(await store!.getJob(gw.jobId)).toMatchObject({ status: 'paused', endReason: 'budget' });
        expect(up.seen()).toBe(0);
      } finally {
        await gw.close();
        await up.close();
      }
    }));
});

it("resumeHoldEnder: the recorded call of a resumed job resumes the sibling its hold kept out (not before: the rule counts the need while the call is in flight)", async () => {
  const store = await openSqliteStore(join(dir, 'ender'));
  try {
    const now = Date.now();
    const runner = await store.createRunner({ name: 'r', labels: {}, capacity: 4, credentialHash: 'c'.repeat(64), now });
    const root = await store.createJob({ parentId: null, agent: 'a', agentVersion: '1', input: {}, selector: {}, priority: 0, budgetMicros: 1_000_000, now });
    const child = async (hash: string) => {
      const j = await store.createJob({ parentId: root.id, agent: 'a', agentVersion: '1', input: {}, selector: {}, priority: 0, budgetMicros: 0, now });
      await store.claimJobById(j.id, { id: runner.id, labels: {} }, hash, now);
      return (await store.transitionJob(j.id, 1, ['assigned'], 'running', now))!;
    };
    const x = await child('x'.repeat(64));
    const y = await child('y'.repeat(64));
    // $0.90 of $1.00 spent; x and y each refused a call of up to $0.08 and paused
    const r = await store.reserveBudget(root.id, 900_000, now, 60_000);
    if (!r?.ok) throw new Error('the $0.90 did not fit');
    await store.settleBudget(root.id, r.reservationId, 900_000, now);
    await store.pauseJobForBudget(x.id, 1, 'budget exhausted', now, 80_000);
    await store.pauseJobForBudget(y.id, 1, 'budget exhausted', now, 80_000);
    // y's paused attempt has ended (its process gone: a resume now queues it at once)
    await store.endPausedAttempt(y.id, 1, now, `sess-${y.id}`);
    // $0.05 more: $0.15, room for x's call; y's would fit only in the room x holds
    await store.topUpBudget(root.id, 50_000, now);
    expect((await store.resumeBudgetPausedJobs(root.id, now, [x.id])).map((j) => j.id)).toEqual([x.id]);
    await store.claimJobById(x.id, { id: runner.id, labels: {} }, 'z'.repeat(64), now);
    const x2 = (await store.transitionJob(x.id, 2, ['assigned'], 'running', now))!;
    // x's call admitted as holder (the budget rows stop holding its room: the reservation does),
    // recorded at $0.01: $0.14 left, y's $0.08 fits
    const mine = await store.reserveBudget(root.id, 80_000, now, 60_000, x.id, undefined, x.id);
    if (!mine?.ok) throw new Error("x's call did not fit");
    expect(await store.getTreeBudget(root.id, now)).toEqual({ rootId: root.id, limitMicros: 1_050_000, spentMicros: 900_000, reservedMicros: 80_000, remainingMicros: 70_000 });
    // the resume rule still counts x's need while its call is in flight: y is not resumed into it
    expect(await store.listResumableBudgetPausedJobs(root.id, 'tree')).toEqual([]);
    await store.settleBudget(root.id, mine.reservationId, 10_000, now);
    expect(await store.getJob(y.id)).toMatchObject({ status: 'paused', endReason: 'budget' });
    await resumeHoldEnder({ store, bus: new EventBus(), log: silentLogger, now: () => now })(x2);
    expect(await store.getJob(y.id)).toMatchObject({ status: 'queued', resumeSessionId: `sess-${y.id}` });
    const queued = (await store.listEvents(y.id, 0, 100)).flatMap((e) => (e.type === 'status' && e.data.status === 'queued' ? [e.data.message] : [])).at(-1);
    expect(queued).toBe(`job ${x.id} made the call it was resumed for: the room it held is free; resuming session sess-${y.id}`);
  } finally {
    await store.close();
  }
});
