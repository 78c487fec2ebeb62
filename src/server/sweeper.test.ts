import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Job, Runner } from '../protocol/index.js';
import { FakeRunner, startTestServer, type TestServer } from './test-helpers.js';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openStore } from '../store/open.js';
import type { Store } from '../store/types.js';
import { silentLogger } from '../core/log.js';
import { Sweeper } from './sweeper.js';
import { EventBus } from './event-bus.js';

// Generous enough that a loaded 2-core CI machine never stalls a 100 ms heartbeat loop past it.
const TIMEOUT = 3000;
const SWEEP = 200;
/** Scheduling slack allowed on top of timeout + one sweep (timers, store writes under load). */
const SLACK = 1000;

/** Runs `f` on a SQLite store in a fresh folder, removed afterwards. */
async function withStore(f: (store: Store) => Promise<void>): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'flotilla-sweep-'));
  const store = await openStore({ dataDir: dir });
  try {
    await f(store);
  } finally {
    await store.close();
    await rm(dir, { recursive: true, force: true });
  }
}

describe('liveness sweeper', () => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer({ heartbeatIntervalMs: 100, heartbeatTimeoutMs: TIMEOUT, sweepIntervalMs: SWEEP, dispatchIntervalMs: 100 });
  });
  afterAll(() => t.close());

  it('marks a silent runner offline and its running job lost within timeout + one sweep, with a status event', async () => {
    const r = await FakeRunner.start(t, { name: 'quiet' });
    const welcome = await r.hello({ name: 'quiet' });
    expect(welcome.heartbeatIntervalMs).toBe(100);
    const res = await t.api('/api/jobs', { json: { agent: 'test-fixer', input: { repo: 'x' } } });
    const job = (await res.json()) as Job;
    const a = (await r.next('job.assign')).assignment;
    r.send({ type: 'job.events', jobId: job.id, attempt: a.attempt, events: [{ rseq: 1, at: new Date().toISOString(), type: 'harness.started', data: { harness: 'x', pid: 1 } }] });
    await r.next('ack');
    // Heartbeat a few times (keeps it alive past the start-up grace), then go silent but stay connected.
    for (let i = 0; i < 32; i++) {
      r.send({ type: 'heartbeat', running: [{ jobId: job.id, attempt: a.attempt }] });
      await new Promise((res) => setTimeout(res, 100));
    }
    const lastBeat = (await t.store.getRunner(r.runnerId))!.lastHeartbeatAt!;
    expect((await t.store.getJob(job.id))?.status).toBe('running');
    let lostAt = 0;
    while (Date.now() - lastBeat < TIMEOUT + SWEEP + SLACK + 1500) {
      if ((await t.store.getJob(job.id))?.status === 'lost') {
        lostAt = Date.now();
        break;
      }
      await new Promise((res) => setTimeout(res, 20));
    }
    expect(lostAt).toBeGreaterThan(0);
    // Not before the timeout, and within timeout + one sweep (+ scheduling slack).
    expect(lostAt - lastBeat).toBeGreaterThanOrEqual(TIMEOUT);
    expect(lostAt - lastBeat).toBeLessThanOrEqual(TIMEOUT + SWEEP + SLACK);
    const row = await t.store.getJob(job.id);
    expect(row).toMatchObject({ endReason: 'runner_lost' });
    const evs = await t.store.listEvents(job.id, 0, 100);
    const last = evs.at(-1)!;
    expect(last.type).toBe('status');
    if (last.type === 'status') {
      expect(last.data.status).toBe('lost');
      expect(last.data.message).toMatch(/^runner quiet silent for [0-9]+s$/);
    }
    const list = (await (await t.api('/api/runners')).json()) as { runners: Runner[] };
    expect(list.runners.find((x) => x.id === r.runnerId)?.status).toBe('offline');
    // Its silent socket was closed (4408: it may reconnect). Coming back brings it online; the
    // lost job stays lost and the runner is told to drop it.
    for (let i = 0; i < 100 && r.closeCode === null; i++) await new Promise((res) => setTimeout(res, 20)); // the close frame follows the sweep
    expect(r.closeCode).toBe(4408);
    const back = await FakeRunner.connect(t.url, r.runnerId, r.credential!);
    await back.hello({ name: 'quiet', running: [{ jobId: job.id, attempt: a.attempt }] });
    expect((await back.next('job.cancel')).reason).toMatch(/lost/);
    const list2 = (await (await t.api('/api/runners')).json()) as { runners: Runner[] };
    expect(list2.runners.find((x) => x.id === r.runnerId)?.status).toBe('online');
    await back.close();
  });
});

describe('Sweeper.sweepOnce (controlled clock)', () => {
  it('waits one timeout after start, then marks the stale runner jobs lost with a status event', async () => {
    await withStore(async (store) => {
      const T0 = 1_800_000_000_000;
      const runner = await store.createRunner({ name: 'r1', labels: {}, capacity: 1, credentialHash: 'h', now: T0 });
      await store.touchRunner(runner.id, T0);
      const job = await store.createJob({ parentId: null, agent: 'a', agentVersion: '1', input: {}, selector: {}, priority: 0, budgetMicros: 1, now: T0 });
      await store.claimJob({ id: runner.id, labels: {} }, 'tokhash', T0);
      // running (an assigned job its runner never started goes back to the queue instead)
      await store.transitionJob(job.id, 1, ['assigned'], 'running', T0, { startedAt: T0 });
      let now = T0 + 60_000; // the runner has been silent for 60 s
      const bus = new EventBus();
      const published: number[] = [];
      bus.subscribe(job.id, (evs) => published.push(...evs.map((e) => e.seq)));
      const sweeper = new Sweeper({ store, bus, log: silentLogger, now: () => now, timeoutMs: 20_000, intervalMs: 1000, startedAt: now });
      now += 19_999; // server up for less than one timeout: no sweep
      expect(await sweeper.sweepOnce()).toEqual([]);
      expect((await store.getJob(job.id))?.status).toBe('running');
      now += 1;
      const lost = await sweeper.sweepOnce();
      expect(lost.map((j) => j.id)).toEqual([job.id]);
      expect((await store.getJob(job.id))?.status).toBe('lost');
      const evs = await store.listEvents(job.id, 0, 10);
      // silent for (60,000 + 20,000) ms = 80 s
      expect(evs).toMatchObject([{ seq: 1, type: 'status', data: { status: 'lost', message: 'runner r1 silent for 80s', runnerId: runner.id } }]);
      expect(published).toEqual([1]);
      expect(await sweeper.sweepOnce()).toEqual([]);
    });
  });
});

describe('Sweeper.sweepOnce: a job its runners never start', () => {
  it('fails it (runner_never_started) once it went back to the queue 3 times, with a status event saying so', async () => {
    await withStore(async (store) => {
      const T0 = 1_800_000_000_000;
      const runner = await store.createRunner({ name: 'r1', labels: {}, capacity: 1, credentialHash: 'h', now: T0 });
      const job = await store.createJob({ parentId: null, agent: 'a', agentVersion: '1', input: {}, selector: {}, priority: 0, budgetMicros: 1, now: T0 });
      // Three times assigned and never started (the hub's reconcile requeued it each time).
      for (const attempt of [1, 2, 3]) {
        await store.claimJobById(job.id, { id: runner.id, labels: {} }, `t${attempt}`, T0);
        expect((await store.requeueUnstartedJob(job.id, attempt, T0))?.status).toBe('queued');
      }
      await store.touchRunner(runner.id, T0);
      await store.claimJobById(job.id, { id: runner.id, labels: {} }, 't4', T0);
      let now = T0 + 60_000; // the runner has been silent for 60 s
      const sweeper = new Sweeper({ store, bus: new EventBus(), log: silentLogger, now: () => now, timeoutMs: 20_000, intervalMs: 1000, startedAt: now });
      now += 20_000;
      expect((await sweeper.sweepOnce()).map((j) => [j.id, j.status, j.endReason])).toEqual([[job.id, 'failed', 'runner_never_started']]);
      expect(await store.getJob(job.id)).toMatchObject({ status: 'failed', endReason: 'runner_never_started', attempt: 4, runnerId: runner.id, finishedAt: now });
      // silent for (60,000 + 20,000) ms = 80 s
      expect(await store.listEvents(job.id, 0, 10)).toMatchObject([
        {
          seq: 1,
          type: 'status',
          data: {
            status: 'failed',
            message: 'runner r1 silent for 80s; assigned 4 times and never started (back in the queue 3 times without using a retry): failed, so that it does not go round for ever; the runners’ logs say why they did not start it',
            runnerId: runner.id,
          },
        },
        // ended by the server, not a runner: its job.finished, the last event (status-events.ts)
        { seq: 2, type: 'job.finished', data: { status: 'failed', reason: 'runner_never_started', error: 'assigned 4 times and never started (back in the queue 3 times without using a retry): failed, so that it does not go round for ever; the runners’ logs say why they did not start it' } },
      ]);
      expect(await sweeper.sweepOnce()).toEqual([]);
    });
  });
});
