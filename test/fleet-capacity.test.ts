// Issue 5, capacity kinds through the real server: a job holds the whole runner, a workspace,
// a browser slot or nothing; the dispatcher places jobs only where what they hold allows; the
// owner changes capacity through PATCH /api/runners/{id}. Fake runners speak the real
// protocol over real WebSockets; SQLite and PostgreSQL.
import { mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { ApiErrorBody, Job, JobAssignment, Runner } from '../src/protocol/index.js';
import { createTestDatabase } from '../src/store/test-pg.js';
import { FakeRunner, SHIPPED_AGENTS, startTestServer, type TestServer } from '../src/server/test-helpers.js';

const at = () => new Date().toISOString();
const pg = await createTestDatabase();
let agentsDir = '';
beforeAll(async () => {
  agentsDir = await mkdtemp(join(tmpdir(), 'flotilla-capacity-agents-'));
  for (const holds of ['runner', 'workspace', 'browser', 'none'] as const) {
    const name = `holds-${holds}`;
    await mkdir(join(agentsDir, name), { recursive: true });
    await writeFile(join(agentsDir, name, 'agent.yaml'), `name: ${name}\nharness: command\ncommand: [echo, hi]\nholds: ${holds}\n`);
    await writeFile(join(agentsDir, name, 'prompt.md'), 'hi');
  }
});
afterAll(async () => {
  await pg?.drop();
  if (agentsDir) await rm(agentsDir, { recursive: true, force: true });
});

describe.each([['sqlite', null], ...(pg ? [['postgres', pg.url]] : [])] as Array<[string, string | null]>)('capacity kinds (%s)', (_d, databaseUrl) => {
  let t: TestServer;
  const open: FakeRunner[] = [];
  let pool = 0;
  beforeAll(async () => {
    t = await startTestServer({ dispatchIntervalMs: 100, agentsDirs: [SHIPPED_AGENTS, agentsDir], ...(databaseUrl ? { databaseUrl } : {}) });
  });
  afterEach(async () => {
    for (const r of open.splice(0)) await r.close();
    for (const j of await t.store.listJobs({ limit: 500 })) {
      if (['queued', 'assigned', 'running'].includes(j.status)) await t.store.transitionJob(j.id, null, [j.status], 'cancelled', Date.now());
    }
  });
  afterAll(() => t.close());

  /** A runner in its own pool (label), so each test's jobs go only to its runner. */
  const runner = async (capacity: number, browserSlots = 1) => {
    const labels = { pool: `p${++pool}` };
    const r = await FakeRunner.start(t, { name: labels.pool, labels, capacity });
    open.push(r);
    r.send({ type: 'hello', name: labels.pool, labels, capacity, browserSlots, version: 'test', running: [] });
    await r.next('welcome');
    return { r, labels };
  };
  const job = async (holds: string, labels: Record<string, string>): Promise<Job> => {
    const res = await t.api('/api/jobs', { json: { agent: `holds-${holds}`, labels } });
    expect(res.status).toBe(201);
    return (await res.json()) as Job;
  };
  const assigned = async (r: FakeRunner): Promise<JobAssignment> => (await r.next('job.assign', () => true, 5000)).assignment;
  const finish = (r: FakeRunner, a: JobAssignment) =>
    r.send({ type: 'job.events', jobId: a.jobId, attempt: a.attempt, events: [{ rseq: 1, at: at(), type: 'job.finished', data: { status: 'succeeded' } }] });
  const status = async (id: number) => (await t.store.getJob(id))?.status;

  it('a browser job needs a browser slot; a workspace job still fits beside it', async () => {
    const { r, labels } = await runner(2, 1);
    const b1 = await job('browser', labels);
    const b2 = await job('browser', labels);
    const w = await job('workspace', labels);
    const got = [await assigned(r), await assigned(r)].map((a) => a.jobId).sort((x, y) => x - y);
    expect(got).toEqual([b1.id, w.id]);
    expect(await r.none('job.assign', 600)).toBe(true);
    expect(await status(b2.id)).toBe('queued');
    const first = (await t.store.getJob(b1.id))!;
    finish(r, { jobId: b1.id, attempt: first.attempt } as JobAssignment);
    expect((await assigned(r)).jobId).toBe(b2.id);
  });

  it('a whole-runner job runs alone: it waits for the runner to be idle, and nothing starts beside it', async () => {
    const { r, labels } = await runner(3);
    const w = await job('workspace', labels);
    const wa = await assigned(r);
    expect(wa.jobId).toBe(w.id);
    const whole = await job('runner', labels);
    expect(await r.none('job.assign', 600)).toBe(true);
    expect(await status(whole.id)).toBe('queued');
    finish(r, wa);
    const ra = await assigned(r);
    expect(ra.jobId).toBe(whole.id);
    const after = await job('none', labels);
    const w2 = await job('workspace', labels);
    expect(await r.none('job.assign', 600)).toBe(true);
    expect([await status(after.id), await status(w2.id)]).toEqual(['queued', 'queued']);
    finish(r, ra);
    const next = [await assigned(r), await assigned(r)].map((a) => a.jobId).sort((x, y) => x - y);
    expect(next).toEqual([after.id, w2.id]);
  });

  it('a job holding nothing runs beside a full runner', async () => {
    const { r, labels } = await runner(1);
    const w = await job('workspace', labels);
    expect((await assigned(r)).jobId).toBe(w.id);
    const w2 = await job('workspace', labels);
    const n = await job('none', labels);
    expect((await assigned(r)).jobId).toBe(n.id);
    expect(await r.none('job.assign', 500)).toBe(true);
    expect(await status(w2.id)).toBe('queued');
  });

  it('the owner raises capacity through PATCH: the waiting job goes at once and the runner is told the capacity', async () => {
    const { r, labels } = await runner(1);
    const w1 = await job('workspace', labels);
    const a1 = await assigned(r);
    expect([a1.jobId, a1.capacity]).toEqual([w1.id, 1]);
    const w2 = await job('workspace', labels);
    expect(await r.none('job.assign', 500)).toBe(true);
    const res = await t.api(`/api/runners/${r.runnerId}`, { method: 'PATCH', json: { capacity: 2, browserSlots: 2 } });
    expect(res.status).toBe(200);
    expect((await res.json()) as Runner).toMatchObject({ id: r.runnerId, capacity: 2, browserSlots: 2 });
    const a2 = await assigned(r);
    expect([a2.jobId, a2.capacity]).toEqual([w2.id, 2]);
    // The store keeps the owner's setting (a later hello offering 1 does not undo it: conformance).
    expect((await t.store.getRunner(r.runnerId))?.capacity).toBe(2);
  });

  it('PATCH refuses bad settings naming the field, and changes nothing', async () => {
    const { r } = await runner(2);
    const bad = async (body: unknown, field: string | undefined, message: RegExp) => {
      const res = await t.api(`/api/runners/${r.runnerId}`, { method: 'PATCH', json: body });
      expect(res.status).toBe(400);
      const e = ((await res.json()) as ApiErrorBody).error;
      expect(e.code).toBe('invalid_request');
      expect(e.message).toMatch(message);
      if (field) expect(e.field).toBe(field);
    };
    await bad({ capacity: 5 }, 'capacity', /capacity/);
    await bad({ browserSlots: 3 }, 'browserSlots', /^browserSlots \(3\) must not exceed capacity \(2\)$/);
    await bad({}, undefined, /give capacity and\/or browserSlots/);
    await bad({ capacity: 2, colour: 'red' }, undefined, /colour/);
    expect(await t.store.getRunner(r.runnerId)).toMatchObject({ capacity: 2, browserSlots: 1, ownerCapacity: null, ownerBrowserSlots: null });
    expect((await t.api('/api/runners/99999', { method: 'PATCH', json: { capacity: 1 } })).status).toBe(404);
  });
});
