import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Job } from '../protocol/index.js';
import { createTestDatabase } from '../store/test-pg.js';
import { FakeRunner, startTestServer, type TestServer } from './test-helpers.js';

// A fresh user's `jobs show 6` (run with `--labels nosuch=label`) said only `queued`; issue 5:
// "a job no runner could ever match says so in its status". And a job only a REVOKED runner's
// labels matched said "still waiting" for good: that runner can never connect again.

async function getJob(t: TestServer, id: number): Promise<Job> {
  const res = await t.api(`/api/jobs/${id}`);
  expect(res.status).toBe(200);
  return (await res.json()) as Job;
}

/** Polls job `id` until `waiting` is not the generic text (the dispatcher's note is throttled to once a second). */
async function waitingNote(t: TestServer, id: number): Promise<string | undefined> {
  for (let i = 0; i < 60; i++) {
    const job = await getJob(t, id);
    if (job.waiting !== 'waiting for a runner') return job.waiting;
    await new Promise((r) => setTimeout(r, 100));
  }
  return (await getJob(t, id)).waiting;
}

/** Polls job `id` until `waiting` is neither the generic text nor `previous`. */
async function noteOtherThan(t: TestServer, id: number, previous: string): Promise<string | undefined> {
  for (let i = 0; i < 60; i++) {
    const w = (await getJob(t, id)).waiting;
    if (w !== 'waiting for a runner' && w !== previous) return w;
    await new Promise((r) => setTimeout(r, 100));
  }
  return (await getJob(t, id)).waiting;
}

const pg = await createTestDatabase();
afterAll(async () => {
  await pg?.drop();
});

describe.each([['sqlite', null], ...(pg ? [['postgres', pg.url]] : [])] as Array<[string, string | null]>)('GET /api/jobs/:id says why a queued job waits (%s)', (_dialect, databaseUrl) => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer({ dispatchIntervalMs: 200, ...(databaseUrl ? { databaseUrl } : {}) });
  });
  afterAll(() => t.close());

  it('no runner matches its labels: `waiting` names them; once assigned, no `waiting`', async () => {
    const plain = await FakeRunner.start(t, { name: 'plain' });
    try {
      await plain.hello({ name: 'plain' });
      const res = await t.api('/api/jobs', { json: { agent: 'test-fixer', input: { repo: 'examples/calc' }, labels: { nosuch: 'label' } } });
      expect(res.status).toBe(201);
      const job = (await res.json()) as Job;
      expect(job.waiting).toBeUndefined(); // the create answer carries no reason yet
      expect(await waitingNote(t, job.id)).toBe('no runner matches nosuch=label, waiting');
      expect((await getJob(t, job.id)).status).toBe('queued');

      const gpu = await FakeRunner.start(t, { name: 'gpu', labels: { nosuch: 'label' } });
      try {
        await gpu.hello({ name: 'gpu', labels: { nosuch: 'label' } });
        const { assignment } = await gpu.next('job.assign');
        expect(assignment.jobId).toBe(job.id);
        const assigned = await getJob(t, job.id);
        expect(assigned.status).toBe('assigned');
        expect(assigned.waiting).toBeUndefined();
      } finally {
        await gpu.close();
      }
    } finally {
      await plain.close();
    }
  });

  it('the only runner with its labels was revoked: no runner matches', async () => {
    const gone = await FakeRunner.start(t, { name: 'gone', labels: { gpu: 'a100' } });
    try {
      await gone.hello({ name: 'gone', labels: { gpu: 'a100' } });
      expect((await t.api(`/api/runners/${gone.runnerId}/revoke`, { json: {} })).status).toBe(200);
      // The job comes right after the revoke's answer, while its connection may still be closing:
      // it must not be handed to it (it was: "could not reach runner gone; back in the queue").
      const res = await t.api('/api/jobs', { json: { agent: 'test-fixer', input: { repo: 'examples/calc' }, labels: { gpu: 'a100' } } });
      const job = (await res.json()) as Job;
      expect(await waitingNote(t, job.id)).toBe('no runner matches gpu=a100, waiting');
      expect(gone.frames.filter((f) => f.type === 'job.assign')).toEqual([]);
      expect(gone.closeCode).toBe(4403);
    } finally {
      await gone.close();
    }
  });

  it('a job paused for budget on a runner that is then revoked is lost at once, saying why; a top-up is refused as for an ended job (it took the money, said resumed, and the job waited for ever)', async () => {
    const reg = await t.api('/api/runners/register', { token: null, json: { token: await t.regToken({}), name: 'doomed', labels: {}, capacity: 1 } });
    const { runnerId } = (await reg.json()) as { runnerId: number };
    const job = await t.store.createJob({ parentId: null, agent: 'test-fixer', agentVersion: '1', input: {}, selector: {}, priority: 0, budgetMicros: 10_000, now: Date.now() });
    await t.store.claimJobById(job.id, { id: runnerId, labels: {} }, 'c'.repeat(64), Date.now());
    await t.store.transitionJob(job.id, 1, ['assigned'], 'running', Date.now(), { startedAt: Date.now(), sessionId: 'sess-doomed' });
    await t.store.pauseJobForBudget(job.id, 1, 'budget exhausted: job tree', Date.now(), 500_000);
    expect((await t.api(`/api/runners/${runnerId}/revoke`, { json: {} })).status).toBe(200);
    const why = `its session and workspace are kept on runner doomed (${runnerId}), which was revoked: it cannot resume; start a new run`;
    expect(await getJob(t, job.id)).toMatchObject({ status: 'lost', endReason: 'runner_revoked', error: why });
    const statuses = (await t.store.listEvents(job.id, 0, 100)).filter((e) => e.type === 'status').map((e) => e.data);
    expect(statuses.at(-1)).toMatchObject({ status: 'lost', message: why, runnerId });
    const topUp = await t.api(`/api/jobs/${job.id}/budget`, { json: { addUsd: 1 } });
    expect([topUp.status, ((await topUp.json()) as { error: { code: string } }).error.code]).toEqual([409, 'job_ended']);
    // resuming its session in a new job is refused too: it lives on the revoked runner only
    const resume = await t.api('/api/jobs', { json: { agent: 'test-fixer', input: {}, resumeJobId: job.id } });
    expect([resume.status, await resume.json()]).toEqual([409, { error: { code: 'not_resumable', field: 'resumeJobId', message: `job ${job.id}'s session and workspace are kept on runner doomed (${runnerId}), which was revoked: it cannot be resumed; start a new run` } }]);
  });

  it('resuming a job paused for budget in a new job is refused with what resumes it: a top-up (it said "resume it once it has ended")', async () => {
    const job = await t.store.createJob({ parentId: null, agent: 'test-fixer', agentVersion: '1', input: {}, selector: { zone: 'nowhere' }, priority: 0, budgetMicros: 10_000, now: Date.now() });
    const reg = await t.api('/api/runners/register', { token: null, json: { token: await t.regToken({}), name: 'payer', labels: {}, capacity: 1 } });
    const { runnerId } = (await reg.json()) as { runnerId: number };
    await t.store.claimJobById(job.id, { id: runnerId, labels: { zone: 'nowhere' } }, 'd'.repeat(64), Date.now());
    await t.store.transitionJob(job.id, 1, ['assigned'], 'running', Date.now(), { startedAt: Date.now() });
    await t.store.pauseJobForBudget(job.id, 1, 'budget exhausted: job tree', Date.now(), 500_000);
    const res = await t.api('/api/jobs', { json: { agent: 'test-fixer', input: {}, resumeJobId: job.id } });
    expect([res.status, await res.json()]).toEqual([409, { error: { code: 'not_resumable', field: 'resumeJobId', message: `job ${job.id} is paused for budget: a top-up resumes it in its own session (flotilla budget ${job.id} --add USD); resumeJobId starts a new job from an ended one` } }]);
  });

  it('a resume pinned to its runner while that runner is offline says so, then runs there once it connects', async () => {
    const reg = await t.api('/api/runners/register', { token: null, json: { token: await t.regToken({}), name: 'home', labels: { zone: 'venus' }, capacity: 1 } });
    const { runnerId, credential } = (await reg.json()) as { runnerId: number; credential: string };
    const job = await t.store.createJob({ parentId: null, agent: 'test-fixer', agentVersion: '1', input: {}, selector: { zone: 'venus' }, priority: 0, budgetMicros: 1_000_000, pinnedRunnerId: runnerId, now: Date.now() });
    expect(await waitingNote(t, job.id)).toBe(`it resumes a session kept on runner home (${runnerId}), which is offline: waiting for it to reconnect`);
    const r = await FakeRunner.connect(t.url, runnerId, credential);
    try {
      await r.hello({ name: 'home', labels: { zone: 'venus' } });
      expect((await r.next('job.assign')).assignment.jobId).toBe(job.id);
    } finally {
      await r.close();
    }
  });

  it('the note follows the fleet: no match, then a match (not connected), then connected but on hold; resumed, it runs', async () => {
    const res = await t.api('/api/jobs', { json: { agent: 'test-fixer', input: { repo: 'examples/calc' }, labels: { zone: 'mars' } } });
    const job = (await res.json()) as Job;
    expect(await waitingNote(t, job.id)).toBe('no runner matches zone=mars, waiting');
    // Registered (a credential), not connected.
    const reg = await t.api('/api/runners/register', { token: null, json: { token: await t.regToken({}), name: 'r-mars', labels: { zone: 'mars' }, capacity: 1 } });
    const { runnerId, credential } = (await reg.json()) as { runnerId: number; credential: string };
    const notConnected = 'waiting for a runner that matches zone=mars (r-mars)';
    expect(await noteOtherThan(t, job.id, 'no runner matches zone=mars, waiting')).toBe(notConnected);
    // On hold, then connected: still not given to it, and the note says why, with the hold's end.
    const held = await t.api(`/api/runners/${runnerId}/hold`, { json: { for: '15m', reason: 'disk full' } });
    expect(held.status).toBe(200);
    const until = ((await held.json()) as { hold: { until: string } }).hold.until;
    const r = await FakeRunner.connect(t.url, runnerId, credential);
    try {
      await r.hello({ name: 'r-mars', labels: { zone: 'mars' } });
      const heldNote = `every connected runner that matches zone=mars is on hold (r-mars until ${until}), waiting`;
      expect(await noteOtherThan(t, job.id, notConnected)).toBe(heldNote);
      // Extended: the note names the new end (an old end would be stale).
      const extended = await t.api(`/api/runners/${runnerId}/hold`, { json: { for: '1h', extend: true } });
      const later = ((await extended.json()) as { hold: { until: string } }).hold.until;
      expect(Date.parse(later) - Date.parse(until)).toBe(3_600_000);
      expect(await noteOtherThan(t, job.id, heldNote)).toBe(`every connected runner that matches zone=mars is on hold (r-mars until ${later}), waiting`);
      expect(r.frames.filter((f) => f.type === 'job.assign')).toEqual([]);
      expect((await t.api(`/api/runners/${runnerId}/resume`, { method: 'POST' })).status).toBe(200);
      expect((await r.next('job.assign')).assignment.jobId).toBe(job.id);
      expect((await getJob(t, job.id)).waiting).toBeUndefined();
    } finally {
      await r.close();
    }
  });
});
