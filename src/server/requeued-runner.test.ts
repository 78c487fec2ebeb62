// Fleet faults through the real server and the API, on SQLite and PostgreSQL, with fake runners
// on real WebSockets: a job back in the queue (its runner lost, or it refused the job) showed
// its previous runner in `GET /api/jobs` and `GET /api/jobs/{id}` as if it were on it; and a
// runner's recent jobs (`GET /api/runners/{id}`) left out a job whose attempt there was lost
// and then retried elsewhere. Now a queued job is on no runner, and recent jobs list every
// attempt that ran on the runner with how it went there.
import { mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Job, JobList, RunnerDetail } from '../protocol/index.js';
import { createTestDatabase } from '../store/test-pg.js';
import { FakeRunner, SHIPPED_AGENTS, startTestServer, type TestServer, waitFor } from './test-helpers.js';

const at = () => new Date().toISOString();
const TIMEOUT = 1500;

const pg = await createTestDatabase();
let agentsDir = '';
beforeAll(async () => {
  agentsDir = await mkdtemp(join(tmpdir(), 'flotilla-requeued-agents-'));
  for (const [name, extra] of [
    ['plain-job', ''],
    ['retry-job', 'retries: 1\n'],
  ] as const) {
    await mkdir(join(agentsDir, name), { recursive: true });
    await writeFile(join(agentsDir, name, 'agent.yaml'), `name: ${name}\nharness: command\ncommand: [echo, hi]\n${extra}`);
    await writeFile(join(agentsDir, name, 'prompt.md'), 'hi');
  }
});
afterAll(async () => {
  await pg?.drop();
  if (agentsDir) await rm(agentsDir, { recursive: true, force: true });
});

describe.each([['sqlite', null], ...(pg ? [['postgres', pg.url]] : [])] as Array<[string, string | null]>)('a requeued job and its runners (%s)', (_dialect, databaseUrl) => {
  let t: TestServer;
  const runners: FakeRunner[] = [];
  const timers: Array<() => void> = [];
  beforeAll(async () => {
    t = await startTestServer({
      dispatchIntervalMs: 100,
      heartbeatIntervalMs: 500,
      heartbeatTimeoutMs: TIMEOUT,
      sweepIntervalMs: 100,
      agentsDirs: [SHIPPED_AGENTS, agentsDir],
      ...(databaseUrl ? { databaseUrl } : {}),
    });
  });
  afterEach(async () => {
    for (const stop of timers.splice(0)) stop();
    for (const r of runners.splice(0)) await r.close();
  });
  afterAll(() => t.close());

  const runner = async (name: string, labels: Record<string, string>) => {
    const r = await FakeRunner.start(t, { name, labels });
    runners.push(r);
    await r.hello({ name, labels });
    return r;
  };
  const heartbeats = (r: FakeRunner, running: () => { jobId: number; attempt: number }[]) => {
    const timer = setInterval(() => !r.closed && r.send({ type: 'heartbeat', running: running() }), 100);
    const stop = () => clearInterval(timer);
    timers.push(stop);
    return stop;
  };
  const createJob = async (body: Record<string, unknown>): Promise<Job> => {
    const res = await t.api('/api/jobs', { json: body });
    expect(res.status).toBe(201);
    return (await res.json()) as Job;
  };
  const getJob = async (id: number) => (await (await t.api(`/api/jobs/${id}`)).json()) as Job;
  const listed = async (query: string) => ((await (await t.api(`/api/jobs?${query}`)).json()) as JobList).jobs;
  const recent = async (runnerId: number) => ((await (await t.api(`/api/runners/${runnerId}`)).json()) as RunnerDetail).recentJobs;

  it('a job lost on runner A is queued on no runner, then shows in both runners’ recent jobs: lost on A (attempt 1), succeeded on B (attempt 2)', async () => {
    const a = await runner('attempt-a', { pool: 'lost' });
    const stopA = heartbeats(a, () => [{ jobId: job.id, attempt: 1 }]);
    const job = await createJob({ agent: 'retry-job', labels: { pool: 'lost' } });
    expect((await a.next('job.assign')).assignment).toMatchObject({ jobId: job.id, attempt: 1 });
    a.send({ type: 'job.events', jobId: job.id, attempt: 1, events: [{ rseq: 1, at: at(), type: 'harness.started', data: { harness: 'command', pid: 1 } }] });
    await a.next('ack');
    expect(await getJob(job.id)).toMatchObject({ status: 'running', runnerId: a.runnerId });

    // kill -9 of runner A: no heartbeats; the sweep puts its job back in the queue for a retry.
    stopA();
    a.kill();
    const queued = await waitFor(() => getJob(job.id), (j) => j.status === 'queued');
    expect(queued).toMatchObject({ status: 'queued', runnerId: null, attempt: 1 });
    expect((await listed('status=queued')).find((j) => j.id === job.id)).toMatchObject({ status: 'queued', runnerId: null });
    expect((await listed(`runner=${a.runnerId}`)).map((j) => j.id)).not.toContain(job.id);
    // A's recent jobs already show the attempt, lost.
    expect(await recent(a.runnerId)).toEqual([expect.objectContaining({ id: job.id, attempt: 1, outcome: 'lost', current: false, status: 'queued' })]);

    // Runner B takes it (attempt 2) and finishes it.
    const b = await runner('attempt-b', { pool: 'lost' });
    heartbeats(b, () => [{ jobId: job.id, attempt: 2 }]);
    expect((await b.next('job.assign', () => true, 8000)).assignment).toMatchObject({ jobId: job.id, attempt: 2 });
    b.send({
      type: 'job.events',
      jobId: job.id,
      attempt: 2,
      events: [
        { rseq: 1, at: at(), type: 'harness.started', data: { harness: 'command', pid: 2 } },
        { rseq: 2, at: at(), type: 'job.finished', data: { status: 'succeeded', result: { summary: 'done' } } },
      ],
    });
    await b.next('ack');
    expect(await waitFor(() => getJob(job.id), (j) => j.status === 'succeeded')).toMatchObject({ runnerId: b.runnerId, attempt: 2 });

    const onA = await recent(a.runnerId);
    expect(onA).toEqual([expect.objectContaining({ id: job.id, agent: 'retry-job', attempt: 1, outcome: 'lost', current: false, status: 'succeeded' })]);
    expect(onA[0]!.assignedAt).not.toBeNull();
    expect(Date.parse(onA[0]!.endedAt!)).toBeGreaterThanOrEqual(Date.parse(onA[0]!.assignedAt!));
    const onB = await recent(b.runnerId);
    expect(onB).toEqual([expect.objectContaining({ id: job.id, attempt: 2, outcome: 'succeeded', current: true, status: 'succeeded' })]);
    expect(onB[0]!.endedAt).toBe(onB[0]!.finishedAt);
  });

  it('a job its runner refused is back in the queue on no runner; the runner’s recent jobs show that attempt requeued', async () => {
    const c = await runner('refuser', { pool: 'refuse' });
    const job = await createJob({ agent: 'plain-job', labels: { pool: 'refuse' } });
    const { assignment } = await c.next('job.assign');
    c.send({ type: 'job.rejected', jobId: job.id, attempt: assignment.attempt, reason: 'disk full' });
    await waitFor(() => getJob(job.id), (j) => j.status === 'queued');
    await c.close(); // no runner takes it back meanwhile
    expect(await getJob(job.id)).toMatchObject({ status: 'queued', runnerId: null });
    expect((await listed(`runner=${c.runnerId}`)).map((j) => j.id)).not.toContain(job.id);
    expect(await recent(c.runnerId)).toEqual([expect.objectContaining({ id: job.id, attempt: 1, outcome: 'requeued', current: false, status: 'queued', endedAt: expect.any(String) })]);
    await t.api(`/api/jobs/${job.id}/cancel`, { method: 'POST' });
  });
});
