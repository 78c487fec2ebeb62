import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Job } from '../protocol/index.js';
import { FakeRunner, startTestServer, type TestServer } from './test-helpers.js';

describe('hub: heartbeats are answered with the model-call activity of the reported jobs', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer({ dispatchIntervalMs: 100 });
  });
  afterAll(async () => {
    await s?.close();
  });

  it('job.activity lists the reported attempts that made calls: in flight, ms since the last start/end', async () => {
    const r = await FakeRunner.start(s, { name: 'act' });
    await r.hello({ name: 'act' });
    const job = (await (await s.api('/api/jobs', { json: { agent: 'test-fixer', input: { repo: 'x' } } })).json()) as Job;
    const asg = (await r.next('job.assign', () => true, 5000)).assignment;
    expect(asg.jobId).toBe(job.id);
    // Nothing called yet: the reply lists nothing (an empty report gets no reply at all).
    r.send({ type: 'heartbeat', running: [{ jobId: job.id, attempt: 1 }] });
    expect((await r.next('job.activity')).jobs).toEqual([]);
    // Two calls start (as two gateway replicas would note them), one ends 1 s before "now".
    const now = Date.now();
    await s.store.noteModelCall(job.id, 1, 'start', now - 3000);
    await s.store.noteModelCall(job.id, 1, 'start', now - 2000);
    await s.store.noteModelCall(job.id, 1, 'end', now - 1000);
    r.send({ type: 'heartbeat', running: [{ jobId: job.id, attempt: 1 }] });
    const [a] = (await r.next('job.activity')).jobs;
    expect(a).toMatchObject({ jobId: job.id, attempt: 1, inFlight: 1 });
    // 1000 ms ago on the server clock, plus however long the round trip took.
    expect(a!.idleMs).toBeGreaterThanOrEqual(1000);
    expect(a!.idleMs).toBeLessThan(10_000);
    await r.close();
  });

  it('a job waiting on a child is active while the child lives; once it ends, idle from the child\'s end, not from the last report', async () => {
    const r = await FakeRunner.start(s, { name: 'parent-act' });
    await r.hello({ name: 'parent-act' });
    const parent = (await (await s.api('/api/jobs', { json: { agent: 'test-fixer', input: { repo: 'x' } } })).json()) as Job;
    expect((await r.next('job.assign', () => true, 5000)).assignment.jobId).toBe(parent.id);
    const child = await s.store.createJob({ parentId: parent.id, agent: 'test-fixer', agentVersion: '1', input: {}, selector: { pool: 'nowhere' }, priority: 0, budgetMicros: 0, now: Date.now() });
    r.send({ type: 'heartbeat', running: [{ jobId: parent.id, attempt: 1 }] });
    expect((await r.next('job.activity')).jobs).toEqual([{ jobId: parent.id, attempt: 1, inFlight: 1, idleMs: 0 }]);
    // the child ends 3 s "ago": the parent has been idle since then
    const ended = Date.now() - 3000;
    await s.store.transitionJob(child.id, null, ['queued'], 'cancelled', ended, { endReason: 'cancelled' });
    r.send({ type: 'heartbeat', running: [{ jobId: parent.id, attempt: 1 }] });
    const [a] = (await r.next('job.activity')).jobs;
    expect(a).toMatchObject({ jobId: parent.id, attempt: 1, inFlight: 0 });
    expect(a!.idleMs).toBeGreaterThanOrEqual(3000);
    expect(a!.idleMs).toBeLessThan(10_000);
    await r.close();
  });
});
