// Issue "never run a job twice": two runner processes with one runner credential (a work folder
// copied to a second machine) replaced each other over and over, and a job ran 3 times. Now the
// second process is refused (4409) and the first keeps its connection and its job. Real server,
// real WebSockets; PostgreSQL replicas when reachable.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Job, ServerToRunner } from '../protocol/index.js';
import { createTestDatabase } from '../store/test-pg.js';
import { FakeRunner, startTestServer, type TestServer } from './test-helpers.js';

const at = () => new Date().toISOString();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until<T>(fn: () => Promise<T> | T, ok: (v: T) => boolean, timeoutMs = 5000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  while (true) {
    const v = await fn();
    if (ok(v)) return v;
    if (Date.now() > deadline) throw new Error(`condition not met in ${timeoutMs} ms: ${JSON.stringify(v)}`);
    await sleep(25);
  }
}

interface Registered {
  runnerId: number;
  credential: string;
  name?: string;
  warning?: string;
}

const register = async (t: TestServer, name: string, labels: Record<string, string> = {}): Promise<Registered> => {
  const res = await t.api('/api/runners/register', { token: null, json: { token: await t.regToken(labels), name, labels: {}, capacity: 1 } });
  expect(res.status).toBe(201);
  return (await res.json()) as Registered;
};
const connect = (t: TestServer, r: Registered) => FakeRunner.connect(t.url, r.runnerId, r.credential);
const createJob = async (t: TestServer, pool: string): Promise<Job> => {
  const res = await t.api('/api/jobs', { json: { agent: 'test-fixer', input: { repo: 'x' }, labels: { pool } } });
  expect(res.status).toBe(201);
  return (await res.json()) as Job;
};
const finish = (r: FakeRunner, jobId: number, attempt: number) =>
  r.send({
    type: 'job.events',
    jobId,
    attempt,
    events: [
      { rseq: 1, at: at(), type: 'harness.started', data: { harness: 'command', pid: 1 } },
      { rseq: 2, at: at(), type: 'job.finished', data: { status: 'succeeded', result: { summary: 'done' } } },
    ],
  });
const assigns = (...rs: FakeRunner[]) => rs.flatMap((r) => r.frames.filter((f): f is Extract<ServerToRunner, { type: 'job.assign' }> => f.type === 'job.assign'));

describe('one runner credential, one runner process', () => {
  let t: TestServer;
  beforeAll(async () => {
    // No sweep during a test: a silent socket stays open, as a frozen runner's does until the sweep.
    t = await startTestServer({ dispatchIntervalMs: 100, heartbeatIntervalMs: 300, heartbeatTimeoutMs: 1200, sweepIntervalMs: 600_000 });
  });
  afterAll(() => t.close());

  it('a second process is refused (error frame naming the other process, then 4409); the first keeps its connection and its job, which runs once', async () => {
    const reg = await register(t, 'dup-a', { pool: 'dup' });
    const a = await connect(t, reg);
    await a.hello({ name: 'dup-a', instance: 'proc-a' });
    const job = await createJob(t, 'dup');
    const first = await a.next('job.assign');
    // The copy connects with the same credential: before its hello it changes nothing.
    const b = await connect(t, reg);
    await sleep(200);
    expect(a.closed).toBe(false);
    b.send({ type: 'hello', name: 'copied-machine', labels: {}, capacity: 1, version: 'test', running: [], instance: 'proc-b' });
    const err = await b.next('error');
    expect(err.message).toMatch(
      new RegExp(`^another runner process is connected with this runner credential \\(runner dup-a \\(id ${reg.runnerId}\\), version test, connected since \\d{4}-\\d\\d-\\d\\dT[\\d:.]+Z, last heard \\d+s ago\\)`),
    );
    expect(err.message).toContain('the other one keeps its jobs');
    expect(err.message).toContain('`flotilla runners token create`');
    expect(err.message).toContain('`flotilla runner --token <token>`');
    await until(() => b.closeCode, (c) => c !== null);
    expect([b.closeCode, b.closeReason]).toEqual([4409, 'runner credential in use by another runner process']);
    expect(b.frames.map((f) => f.type)).toEqual([]);
    // a is untouched: same socket, same job, the name its hello set.
    a.send({ type: 'heartbeat', running: [{ jobId: job.id, attempt: 1 }] });
    finish(a, job.id, first.assignment.attempt);
    expect((await a.next('ack')).upTo).toBe(2);
    expect(a.closed).toBe(false);
    expect(await t.store.getJob(job.id)).toMatchObject({ status: 'succeeded', attempt: 1, runnerId: reg.runnerId });
    expect(assigns(a, b).map((f) => f.assignment.jobId)).toEqual([]); // the one assign was taken by next()
    expect(await t.store.getRunner(reg.runnerId)).toMatchObject({ name: 'dup-a', connected: true });
    // Refused again on every retry while a lives.
    const c = await connect(t, reg);
    c.send({ type: 'hello', name: 'dup-a', labels: {}, capacity: 1, version: 'test', running: [], instance: 'proc-b' });
    await until(() => c.closeCode, (x) => x !== null);
    expect(c.closeCode).toBe(4409);
    expect(a.closed).toBe(false);
    await a.close();
  });

  it('the same process reconnecting replaces its old socket (4000) and keeps its job', async () => {
    const reg = await register(t, 'blip', { pool: 'blip' });
    const a = await connect(t, reg);
    await a.hello({ name: 'blip', instance: 'proc-a' });
    const job = await createJob(t, 'blip');
    const { assignment } = await a.next('job.assign');
    const a2 = await connect(t, reg);
    await a2.hello({ name: 'blip', instance: 'proc-a', running: [{ jobId: job.id, attempt: assignment.attempt }] });
    await until(() => a.closeCode, (c) => c !== null);
    expect([a.closeCode, a.closeReason]).toEqual([4000, 'replaced by a newer connection']);
    finish(a2, job.id, assignment.attempt);
    expect((await a2.next('ack')).upTo).toBe(2);
    expect(await t.store.getJob(job.id)).toMatchObject({ status: 'succeeded', attempt: 1 });
    expect((await t.store.getRunner(reg.runnerId))?.connected).toBe(true);
    await a2.close();
    await until(async () => (await t.store.getRunner(reg.runnerId))?.connected, (c) => c === false);
    // Stopped cleanly: another process may connect at once.
    const next = await connect(t, reg);
    await next.hello({ name: 'blip', instance: 'proc-next' });
    await next.close();
  });

  it('a holder silent past the heartbeat timeout is replaced by another process (4000); the silent one is refused when it comes back', async () => {
    const reg = await register(t, 'frozen-holder');
    const a = await connect(t, reg);
    await a.hello({ name: 'frozen-holder', instance: 'proc-a' });
    await sleep(1400); // heartbeat timeout 1200 ms, no heartbeat from a
    const b = await connect(t, reg);
    await b.hello({ name: 'frozen-holder', instance: 'proc-b' });
    await until(() => a.closeCode, (c) => c !== null);
    expect(a.closeCode).toBe(4000);
    const back = await connect(t, reg);
    back.send({ type: 'hello', name: 'frozen-holder', labels: {}, capacity: 1, version: 'test', running: [], instance: 'proc-a' });
    await until(() => back.closeCode, (c) => c !== null);
    expect(back.closeCode).toBe(4409);
    expect(b.closed).toBe(false);
    await b.close();
  });

  it('older runners without an instance replace each other as before', async () => {
    const reg = await register(t, 'old-style');
    const a = await connect(t, reg);
    await a.hello({ name: 'old-style' });
    const b = await connect(t, reg);
    await b.hello({ name: 'old-style' });
    await until(() => a.closeCode, (c) => c !== null);
    expect(a.closeCode).toBe(4000);
    await b.close();
  });

  it('revoking the runner also closes a socket that has not said hello yet', async () => {
    const reg = await register(t, 'revoked-pending');
    const a = await connect(t, reg);
    await a.hello({ name: 'revoked-pending', instance: 'proc-a' });
    const b = await connect(t, reg);
    await sleep(50);
    expect((await t.api(`/api/runners/${reg.runnerId}/revoke`, { json: {} })).status).toBe(200);
    await until(() => [a.closeCode, b.closeCode], (c) => c.every((x) => x !== null));
    expect([a.closeCode, b.closeCode]).toEqual([4403, 4403]);
  });
});

describe('runner names are unique among runners that are not revoked', () => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer({ dispatchIntervalMs: 100 });
  });
  afterAll(() => t.close());

  it('registration with a taken name gets NAME-2 and a warning; a revoked runner frees its name', async () => {
    const first = await register(t, 'build-box');
    expect(first).toMatchObject({ name: 'build-box' });
    expect(first.warning).toBeUndefined();
    const second = await register(t, 'build-box');
    expect(second.name).toBe('build-box-2');
    expect(second.warning).toBe(
      'runner name build-box is taken by another runner that is not revoked: registered as build-box-2 (start it with --name build-box-2, or revoke the other runner to free the name)',
    );
    expect((await t.store.getRunner(second.runnerId))?.name).toBe('build-box-2');
    expect((await t.api(`/api/runners/${first.runnerId}/revoke`, { json: {} })).status).toBe(200);
    expect((await register(t, 'build-box')).name).toBe('build-box');
  });

  it('hello asking for a taken name keeps the runner’s name (welcome says which) and keeps the connection; a free name renames', async () => {
    const alpha = await register(t, 'alpha');
    const beta = await register(t, 'beta');
    const r = await connect(t, beta);
    const w = await r.hello({ name: 'alpha', instance: 'p1' });
    expect(w.name).toBe('beta');
    expect(r.closed).toBe(false);
    expect((await t.store.getRunner(beta.runnerId))?.name).toBe('beta');
    expect((await t.store.getRunner(alpha.runnerId))?.name).toBe('alpha');
    await r.close();
    const again = await connect(t, beta);
    const w2 = await again.hello({ name: 'gamma', instance: 'p2' });
    expect(w2.name).toBeUndefined();
    expect((await t.store.getRunner(beta.runnerId))?.name).toBe('gamma');
    const runners = (await (await t.api('/api/runners')).json()) as { runners: { id: number; name: string }[] };
    expect(runners.runners.find((x) => x.id === beta.runnerId)?.name).toBe('gamma');
    await again.close();
  });
});

// PostgreSQL too when reachable (createTestDatabase throws under CI=true when it is not).
const pg = await createTestDatabase();

describe.skipIf(pg === null)('one runner process per credential across two server replicas', () => {
  let a: TestServer;
  let b: TestServer;
  beforeAll(async () => {
    a = await startTestServer({ databaseUrl: pg!.url, dispatchIntervalMs: 100, heartbeatIntervalMs: 300, heartbeatTimeoutMs: 1200, sweepIntervalMs: 600_000 });
    b = await startTestServer({ databaseUrl: pg!.url, dataDir: a.dataDir, dispatchIntervalMs: 100, heartbeatIntervalMs: 300, heartbeatTimeoutMs: 1200, sweepIntervalMs: 600_000 });
  });
  afterAll(async () => {
    await b?.close();
    await a?.close();
    await pg?.drop();
  });

  it('a second process on the other replica is refused (4409); the same process moving replicas takes over and the old socket is closed at its next heartbeat', async () => {
    const reg = await register(a, 'two-replicas', { pool: 'rep' });
    const onA = await connect(a, reg);
    await onA.hello({ name: 'two-replicas', instance: 'proc-a' });
    const job = await createJob(a, 'rep');
    const { assignment } = await onA.next('job.assign');
    const copy = await connect(b, reg);
    copy.send({ type: 'hello', name: 'two-replicas', labels: {}, capacity: 1, version: 'test', running: [], instance: 'proc-b' });
    expect((await copy.next('error')).message).toMatch(/^another runner process is connected with this runner credential \(runner two-replicas/);
    await until(() => copy.closeCode, (c) => c !== null);
    expect(copy.closeCode).toBe(4409);
    onA.send({ type: 'heartbeat', running: [{ jobId: job.id, attempt: 1 }] });
    await sleep(200);
    expect(onA.closed).toBe(false);
    // The same process comes back through B (its socket to A is half-open): B takes it.
    const onB = await connect(b, reg);
    await onB.hello({ name: 'two-replicas', instance: 'proc-a', running: [{ jobId: job.id, attempt: assignment.attempt }] });
    onA.send({ type: 'heartbeat', running: [] });
    await until(() => onA.closeCode, (c) => c !== null);
    expect(onA.closeCode).toBe(4000);
    finish(onB, job.id, assignment.attempt);
    expect((await onB.next('ack')).upTo).toBe(2);
    expect(await b.store.getJob(job.id)).toMatchObject({ status: 'succeeded', attempt: 1 });
    // A's old socket closing did not mark the runner disconnected: B holds it.
    await sleep(100);
    expect((await b.store.getRunner(reg.runnerId))?.connected).toBe(true);
    await onB.close();
  });
});
