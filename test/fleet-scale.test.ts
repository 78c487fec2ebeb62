/**
 * Issue 5 at scale, through the real server and real WebSockets (SQLite and PostgreSQL):
 * - 200 simulated runners with mixed labels and capacities (some held) × 2,000 jobs with mixed
 *   label demands: every job runs exactly once, on a matching runner, never past a runner's
 *   capacity; held runners get nothing.
 * - A server restart with 200 connected runners (the runner's real Session, default reconnect
 *   policy): no one-second window holds more than a quarter of the reconnects, and no job is
 *   assigned twice.
 */
import { mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { JobAssignment, Labels, RunningJobReport } from '../src/protocol/index.js';
import { selectorMatches } from '../src/core/labels.js';
import { silentLogger } from '../src/core/log.js';
import { createTestDatabase } from '../src/store/test-pg.js';
import { FakeRunner, SHIPPED_AGENTS, startTestServer, type TestServer } from '../src/server/test-helpers.js';
import { Session } from '../src/runner/session.js';

const pg = await createTestDatabase();
let agentsDir = '';
beforeAll(async () => {
  agentsDir = await mkdtemp(join(tmpdir(), 'flotilla-scale-agents-'));
  await mkdir(join(agentsDir, 'noop'), { recursive: true });
  await writeFile(join(agentsDir, 'noop', 'agent.yaml'), 'name: noop\nharness: command\ncommand: ["true"]\n');
  await writeFile(join(agentsDir, 'noop', 'prompt.md'), 'noop');
});
afterAll(async () => {
  await pg?.drop();
  if (agentsDir) await rm(agentsDir, { recursive: true, force: true });
});

const OSES = ['linux', 'mac'];
const TOOLCHAINS = ['python', 'node', 'go'];
const at = () => new Date().toISOString();

async function register(t: TestServer, name: string, labels: Labels, capacity: number): Promise<{ runnerId: number; credential: string }> {
  const reg = await t.api('/api/runners/register', { token: null, json: { token: await t.regToken(labels), name, capacity } });
  if (reg.status !== 201) throw new Error(`register ${name}: ${reg.status}`);
  return (await reg.json()) as { runnerId: number; credential: string };
}

describe.each([['sqlite', null], ...(pg ? [['postgres', pg.url]] : [])] as Array<[string, string | null]>)('fleet at scale (%s)', (_dialect, databaseUrl) => {
  it('200 runners × 2,000 jobs: each runs exactly once, on a matching runner, within capacity; held runners get nothing', { timeout: 240_000 }, async () => {
    const t = await startTestServer({ dispatchIntervalMs: 250, heartbeatTimeoutMs: 600_000, agentsDirs: [SHIPPED_AGENTS, agentsDir], ...(databaseUrl ? { databaseUrl } : {}) });
    const runners: FakeRunner[] = [];
    try {
      const info = new Map<number, { labels: Labels; capacity: number; held: boolean; inFlight: number; maxInFlight: number }>();
      const assigns = new Map<number, Array<{ runnerId: number; attempt: number }>>();
      const violations: string[] = [];
      for (let i = 0; i < 200; i++) {
        const labels = { os: OSES[i % 2]!, toolchain: TOOLCHAINS[i % 3]! };
        const capacity = 1 + (i % 4);
        const { runnerId, credential } = await register(t, `r${i}`, labels, capacity);
        const r = await FakeRunner.connect(t.url, runnerId, credential);
        runners.push(r);
        const held = i % 10 === 0;
        if (held) expect((await t.api(`/api/runners/${runnerId}/hold`, { json: { for: '1h', reason: 'scale test' } })).status).toBe(200);
        info.set(runnerId, { labels, capacity, held, inFlight: 0, maxInFlight: 0 });
        r.ws.on('message', (data) => {
          const f = JSON.parse(data.toString()) as { type: string; assignment?: JobAssignment };
          if (f.type !== 'job.assign' || !f.assignment) return;
          const a = f.assignment;
          const me = info.get(runnerId)!;
          (assigns.get(a.jobId) ?? assigns.set(a.jobId, []).get(a.jobId)!).push({ runnerId, attempt: a.attempt });
          me.inFlight++;
          me.maxInFlight = Math.max(me.maxInFlight, me.inFlight);
          if (me.inFlight > me.capacity) violations.push(`runner ${runnerId} has ${me.inFlight} > ${me.capacity}`);
          if (me.held) violations.push(`held runner ${runnerId} got job ${a.jobId}`);
          setTimeout(() => {
            me.inFlight--;
            r.send({
              type: 'job.events',
              jobId: a.jobId,
              attempt: a.attempt,
              events: [
                { rseq: 1, at: at(), type: 'harness.started', data: { harness: 'command', pid: 1 } },
                { rseq: 2, at: at(), type: 'job.finished', data: { status: 'succeeded' } },
              ],
            });
          }, Math.floor(Math.random() * 20));
        });
        await r.hello({ name: `r${i}`, labels, capacity });
      }
      const demands: Labels[] = [{}, { os: 'linux' }, { toolchain: 'python' }, { os: 'mac', toolchain: 'node' }, { os: 'linux', toolchain: 'go' }];
      const selectorOf = new Map<number, Labels>();
      const startedAt = Date.now();
      // Eight clients submitting at once.
      for (let i = 0; i < 2000; i += 8) {
        await Promise.all(
          Array.from({ length: 8 }, async (_, k) => {
            const labels = demands[(i + k) % demands.length]!;
            const res = await t.api('/api/jobs', { json: { agent: 'noop', labels } });
            expect(res.status).toBe(201);
            selectorOf.set(((await res.json()) as { id: number }).id, labels);
          }),
        );
      }
      const deadline = Date.now() + 200_000;
      let done = 0;
      while (Date.now() < deadline) {
        const succeeded = await t.store.listJobs({ status: 'succeeded', limit: 1 });
        const queued = await t.store.countQueuedJobs();
        const active = (await t.store.listActiveAssignments()).length;
        if (queued === 0 && active === 0 && succeeded.length > 0) break;
        await new Promise((r) => setTimeout(r, 200));
      }
      for (const [jobId, sel] of selectorOf) {
        const job = await t.store.getJob(jobId);
        expect([jobId, job?.status, job?.attempt]).toEqual([jobId, 'succeeded', 1]);
        const a = assigns.get(jobId) ?? [];
        expect([jobId, a.length]).toEqual([jobId, 1]);
        const r = info.get(a[0]!.runnerId)!;
        if (!selectorMatches(sel, r.labels)) violations.push(`job ${jobId} (${JSON.stringify(sel)}) ran on ${JSON.stringify(r.labels)}`);
        done++;
      }
      expect(violations).toEqual([]);
      expect(done).toBe(2000);
      expect([...info.values()].filter((r) => r.held).every((r) => r.maxInFlight === 0)).toBe(true);
      console.log(`scale: 2000 jobs on ${info.size} runners in ${Date.now() - startedAt} ms, most parallel on one runner ${Math.max(...[...info.values()].map((r) => r.maxInFlight))}`);
    } finally {
      for (const r of runners) r.kill();
      await t.close();
    }
  });
});

describe('server restart with 200 connected runners', () => {
  it('reconnects are spread (no 1-s window > 50 of 200) and no job is assigned twice', { timeout: 120_000 }, async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'flotilla-restart200-'));
    let t = await startTestServer({ dataDir, dispatchIntervalMs: 250, agentsDirs: [SHIPPED_AGENTS, agentsDir] });
    const port = t.server.port;
    const sessions: Session[] = [];
    const assigned = new Map<number, number>();
    const welcomes: number[] = [];
    let restarted = false;
    try {
      for (let i = 0; i < 200; i++) {
        const { credential } = await register(t, `s${i}`, { pool: 'x' }, 1);
        const running: RunningJobReport[] = [];
        const s: Session = new Session({
          serverUrl: t.url,
          credential,
          hello: () => ({ type: 'hello', name: `s${i}`, labels: { pool: 'x' }, capacity: 1, version: 'test', running: [...running] }),
          running: () => [...running],
          onWelcome: () => {
            if (restarted) welcomes.push(Date.now());
          },
          onMessage: (m) => {
            if (m.type !== 'job.assign') return;
            assigned.set(m.assignment.jobId, (assigned.get(m.assignment.jobId) ?? 0) + 1);
            running.push({ jobId: m.assignment.jobId, attempt: m.assignment.attempt });
            s.send({ type: 'job.accepted', jobId: m.assignment.jobId, attempt: m.assignment.attempt });
          },
          // The runner's default policy (runner.ts).
          reconnect: { minMs: 250, maxMs: 10_000, spreadMs: 10_000 },
          log: silentLogger,
        });
        sessions.push(s);
        await s.start(5000);
      }
      for (let i = 0; i < 300; i++) expect((await t.api('/api/jobs', { json: { agent: 'noop', labels: { pool: 'x' } } })).status).toBe(201);
      while ([...assigned.keys()].length < 200) await new Promise((r) => setTimeout(r, 50));

      await t.server.close();
      await t.store.close();
      restarted = true;
      const downAt = Date.now();
      t = await startTestServer({ dataDir, port, dispatchIntervalMs: 250, agentsDirs: [SHIPPED_AGENTS, agentsDir] });
      while (welcomes.length < 200 && Date.now() - downAt < 40_000) await new Promise((r) => setTimeout(r, 100));
      expect(welcomes.length).toBe(200);
      welcomes.sort((a, b) => a - b);
      let worst = 0;
      for (let i = 0, j = 0; i < welcomes.length; i++) {
        while (welcomes[i]! - welcomes[j]! >= 1000) j++;
        worst = Math.max(worst, i - j + 1);
      }
      console.log(`restart: 200 reconnects over ${welcomes.at(-1)! - welcomes[0]!} ms, busiest 1-s window ${worst}`);
      expect(worst).toBeLessThanOrEqual(50);
      // A few dispatch passes after everyone is back: still nothing assigned twice.
      await new Promise((r) => setTimeout(r, 1500));
      expect([...assigned.values()].every((n) => n === 1)).toBe(true);
      expect(assigned.size).toBe(200);
      expect(await t.store.countQueuedJobs()).toBe(100);
      for (const a of await t.store.listActiveAssignments()) expect(a.attempt).toBe(1);
    } finally {
      await Promise.all(sessions.map((s) => s.close()));
      await t.close();
      await rm(dataDir, { recursive: true, force: true });
    }
  });
});
