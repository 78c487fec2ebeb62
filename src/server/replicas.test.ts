import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Job } from '../protocol/index.js';
import { createTestDatabase } from '../store/test-pg.js';
import { FakeRunner, readSse, startTestServer, type TestServer } from './test-helpers.js';

// Two server replicas sharing one PostgreSQL database (skipped when PostgreSQL is unreachable
// outside CI; createTestDatabase throws under CI=true).
const pg = await createTestDatabase();

describe.skipIf(pg === null)('two server replicas on one PostgreSQL database', () => {
  let a: TestServer;
  let b: TestServer;
  beforeAll(async () => {
    a = await startTestServer({ databaseUrl: pg!.url, dispatchIntervalMs: 200, heartbeatIntervalMs: 200 });
    // Same data folder: replica B reads the admin token A created.
    b = await startTestServer({ databaseUrl: pg!.url, dataDir: a.dataDir, dispatchIntervalMs: 200 });
  });
  afterAll(async () => {
    await b?.close();
    await a?.close();
    await pg?.drop();
  });

  it('a job created on B runs on A\'s runner; B streams its events; a cancel on B reaches the runner through its heartbeat', async () => {
    expect(b.admin).toBe(a.admin);
    const r = await FakeRunner.start(a, { name: 'on-a' });
    await r.hello({ name: 'on-a' });
    const job = (await (await b.api('/api/jobs', { json: { agent: 'test-fixer', input: { repo: 'x' } } })).json()) as Job;
    // A's periodic pass finds it (B has no runner).
    const asg = (await r.next('job.assign', () => true, 3000)).assignment;
    expect(asg.jobId).toBe(job.id);
    const stream = readSse(await b.api(`/api/jobs/${job.id}/events`), { timeoutMs: 8000 });
    r.send({ type: 'job.events', jobId: job.id, attempt: 1, events: [{ rseq: 1, at: new Date().toISOString(), type: 'harness.started', data: { harness: 'x', pid: 1 } }] });
    await r.next('ack');
    // Cancel through B: the runner is connected to A, so it learns it from the reconcile of its next heartbeat.
    const res = await b.api(`/api/jobs/${job.id}/cancel`, { method: 'POST' });
    expect(res.status).toBe(200);
    r.send({ type: 'heartbeat', running: [{ jobId: job.id, attempt: 1 }] });
    expect((await r.next('job.cancel')).reason).toMatch(/cancel/);
    // The job reads `cancelling` until its runner reports the process tree gone.
    expect(((await (await b.api(`/api/jobs/${job.id}`)).json()) as Job).status).toBe('cancelling');
    r.send({ type: 'job.events', jobId: job.id, attempt: 1, events: [{ rseq: 2, at: new Date().toISOString(), type: 'job.finished', data: { status: 'cancelled', reason: 'cancelled' } }] });
    await r.next('ack');
    const msgs = await stream;
    const jobMsgs = msgs.filter((m) => m.event === 'job');
    const types = jobMsgs.map((m) => (JSON.parse(m.data) as { type: string }).type);
    // queued note, assigned, harness.started, cancelling, the runner's job.finished, ...
    expect(types.slice(0, 5)).toEqual(['status', 'status', 'harness.started', 'status', 'job.finished']);
    expect(jobMsgs.map((m) => Number(m.id))).toEqual(jobMsgs.map((_, i) => i + 1));
    expect(msgs.at(-1)).toEqual({ event: 'end', data: '{"status":"cancelled"}' });
    await r.close();
  });

  it('jobs start naming a runner connected to A, sent to B: 409 that says it is connected to another replica', async () => {
    const r = await FakeRunner.start(a, { name: 'start-on-a', labels: { only: 'a' } });
    await r.hello({ name: 'start-on-a', labels: { only: 'a' } });
    const job = (await (await b.api('/api/jobs', { json: { agent: 'test-fixer', input: { repo: 'x' }, labels: { only: 'nobody' } } })).json()) as Job;
    const res = await b.api(`/api/jobs/${job.id}/start`, { method: 'POST', json: { runnerId: r.runnerId, force: true } });
    expect(res.status).toBe(409);
    const body = (await res.json()) as { error: { code: string; message: string } };
    expect(body.error).toMatchObject({ code: 'not_connected', message: `runner start-on-a (${r.runnerId}) is connected to another server replica: run jobs start against the server it is connected to` });
    expect((await b.api(`/api/jobs/${job.id}/cancel`, { method: 'POST' })).status).toBe(200);
    await r.close();
  });

  it('a capacity set through B holds on A\'s runner before A assigns anything more, and a raise is used', async () => {
    const r = await FakeRunner.start(a, { name: 'cap-on-a', labels: { cap: 'x' }, capacity: 2 });
    await r.hello({ name: 'cap-on-a', labels: { cap: 'x' }, capacity: 2 });
    expect((await b.api(`/api/runners/${r.runnerId}`, { method: 'PATCH', json: { capacity: 1 } })).status).toBe(200);
    const make = async () => ((await (await b.api('/api/jobs', { json: { agent: 'test-fixer', input: { repo: 'x' }, labels: { cap: 'x' } } })).json()) as Job).id;
    const first = await make();
    const second = await make();
    expect((await r.next('job.assign', () => true, 3000)).assignment.jobId).toBe(first);
    // A's passes (every 200 ms) see capacity 1: the second waits.
    await new Promise((res) => setTimeout(res, 800));
    expect(((await (await a.api(`/api/jobs/${second}`)).json()) as Job).status).toBe('queued');
    // Raised through B: A's next pass gives the runner the second job beside the first.
    expect((await b.api(`/api/runners/${r.runnerId}`, { method: 'PATCH', json: { capacity: 2 } })).status).toBe(200);
    const asg = (await r.next('job.assign', () => true, 3000)).assignment;
    expect(asg).toMatchObject({ jobId: second, capacity: 2 });
    await r.close();
  });
});
