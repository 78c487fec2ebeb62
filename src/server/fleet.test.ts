// Issue 5 through the real server: holds, jobs start, revocation, retries of lost jobs with
// fencing (events, reconnects and the gateway refuse the old attempt), bad runner input, and
// the fleet API. Fake runners speak the real protocol over real WebSockets.
import { mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Job, JobEvent, Runner, RunnerDetail, RunnerList } from '../protocol/index.js';
import { createTestDatabase } from '../store/test-pg.js';
import { FakeRunner, SHIPPED_AGENTS, startTestServer, type TestServer, waitFor } from './test-helpers.js';

const at = () => new Date().toISOString();
const TIMEOUT = 1500;
const SWEEP = 100;

const pg = await createTestDatabase();
let agentsDir = '';
beforeAll(async () => {
  agentsDir = await mkdtemp(join(tmpdir(), 'flotilla-fleet-agents-'));
  for (const [name, extra] of [
    ['plain-job', ''],
    ['retry-job', 'retries: 1\n'],
  ] as const) {
    await mkdir(join(agentsDir, name), { recursive: true });
    await writeFile(join(agentsDir, name, 'agent.yaml'), `name: ${name}\nharness: command\ncommand: [echo, hi]\n${extra}`);
    await writeFile(join(agentsDir, name, 'prompt.md'), 'hi');
    // One turn for the scripted model: these tests check the job token at the gateway (200).
    await writeFile(join(agentsDir, name, 'script.yaml'), 'turns:\n  - usage: { input_tokens: 1, output_tokens: 1 }\n    content:\n      - text: "hi"\n');
  }
});
afterAll(async () => {
  await pg?.drop();
  if (agentsDir) await rm(agentsDir, { recursive: true, force: true });
});

describe.each([['sqlite', null], ...(pg ? [['postgres', pg.url]] : [])] as Array<[string, string | null]>)('the fleet (%s)', (_dialect, databaseUrl) => {
  let t: TestServer;
  const runners: FakeRunner[] = [];
  beforeAll(async () => {
    t = await startTestServer({
      dispatchIntervalMs: 100,
      heartbeatIntervalMs: 500,
      heartbeatTimeoutMs: TIMEOUT,
      sweepIntervalMs: SWEEP,
      agentsDirs: [SHIPPED_AGENTS, agentsDir],
      maxRunnerFrameBytes: 64 * 1024,
      ...(databaseUrl ? { databaseUrl } : {}),
    });
  });
  afterEach(async () => {
    for (const r of runners.splice(0)) await r.close();
    for (const j of await t.store.listJobs({ limit: 500 })) {
      if (['queued', 'assigned', 'running'].includes(j.status)) await t.store.transitionJob(j.id, null, [j.status], 'cancelled', Date.now());
    }
    for (const r of await t.store.listRunners()) await t.store.setRunnerHold(r.id, null);
  });
  afterAll(() => t.close());

  const runner = async (o: { name?: string; labels?: Record<string, string>; capacity?: number } = {}) => {
    const r = await FakeRunner.start(t, o);
    runners.push(r);
    await r.hello(o);
    return r;
  };
  /** Registers a runner and connects it (credential kept for reconnects), then hello. */
  const runnerWithCredential = async (name: string, labels: Record<string, string>) => {
    const reg = await t.api('/api/runners/register', { token: null, json: { token: await t.regToken(labels), name, capacity: 1 } });
    const { runnerId, credential } = (await reg.json()) as { runnerId: number; credential: string };
    const r = await FakeRunner.connect(t.url, runnerId, credential);
    runners.push(r);
    await r.hello({ name, labels });
    return { r, runnerId, credential };
  };
  const createJob = async (body: Record<string, unknown>): Promise<Job> => {
    const res = await t.api('/api/jobs', { json: body });
    expect(res.status).toBe(201);
    return (await res.json()) as Job;
  };
  const started = (r: FakeRunner, jobId: number, attempt: number, rseq = 1) =>
    r.send({ type: 'job.events', jobId, attempt, events: [{ rseq, at: at(), type: 'harness.started', data: { harness: 'command', pid: 1 } }] });
  const heartbeats = (r: FakeRunner, running: () => { jobId: number; attempt: number }[]) => {
    const timer = setInterval(() => {
      if (!r.closed) r.send({ type: 'heartbeat', running: running() });
    }, 100);
    return () => clearInterval(timer);
  };
  const gateway = (token: string) =>
    fetch(`${t.url}/v1/messages`, {
      method: 'POST',
      headers: { 'x-api-key': token, 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
      body: JSON.stringify({ model: 'claude-sonnet-4-5', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] }),
    });

  it('a held runner takes nothing from the queue; resume, extend, and jobs start --force', async () => {
    const held = await runner({ name: 'held', labels: { pool: 'h' } });
    const running: { jobId: number; attempt: number }[] = [];
    const stop = heartbeats(held, () => running);
    try {
    const res = await t.api(`/api/runners/${held.runnerId}/hold`, { json: { for: '15m', reason: 'disk full' } });
    expect(res.status).toBe(200);
    const view = (await res.json()) as Runner;
    expect(view).toMatchObject({ status: 'on_hold', hold: { reason: 'disk full', kind: 'manual' } });
    const until = Date.parse(view.hold!.until);
    expect(until - Date.now()).toBeGreaterThan(15 * 60_000 - 5_000);
    expect(until - Date.now()).toBeLessThanOrEqual(15 * 60_000);

    const job = await createJob({ agent: 'plain-job', labels: { pool: 'h' } });
    expect(await held.none('job.assign', 700)).toBe(true);
    expect((await t.store.getJob(job.id))?.status).toBe('queued');

    // Extend adds to the end of the current hold.
    const ext = (await (await t.api(`/api/runners/${held.runnerId}/hold`, { json: { for: '1h', reason: 'still full', extend: true } })).json()) as Runner;
    expect(Date.parse(ext.hold!.until) - until).toBe(3_600_000);
    // Without --force, jobs start refuses the held runner; with it, the job goes there.
    const refused = await t.api(`/api/jobs/${job.id}/start`, { json: {} });
    expect(refused.status).toBe(409);
    expect(((await refused.json()) as { error: { code: string; message: string } }).error).toMatchObject({ code: 'on_hold', message: expect.stringMatching(/held 0\/1 on hold/) });
    const forced = await t.api(`/api/jobs/${job.id}/start`, { json: { force: true } });
    expect(forced.status).toBe(200);
    expect((await forced.json()) as Job).toMatchObject({ id: job.id, status: 'assigned', runnerId: held.runnerId, attempt: 1 });
    expect((await held.next('job.assign')).assignment).toMatchObject({ jobId: job.id, force: true });
    running.push({ jobId: job.id, attempt: 1 });

    // A second queued job stays put until resume.
    const job2 = await createJob({ agent: 'plain-job', labels: { pool: 'h' } });
    expect(await held.none('job.assign', 400)).toBe(true);
    const resumed = (await (await t.api(`/api/runners/${held.runnerId}/resume`, { json: {} })).json()) as Runner;
    expect(resumed.hold).toBeNull();
    // Capacity 1 is used by the forced job: still nothing until it ends.
    expect(await held.none('job.assign', 400)).toBe(true);
    held.send({ type: 'job.events', jobId: job.id, attempt: 1, events: [{ rseq: 1, at: at(), type: 'job.finished', data: { status: 'succeeded' } }] });
    expect((await held.next('job.assign')).assignment.jobId).toBe(job2.id);

    // extend without a hold; bad duration names the field.
    const noHold = await t.api(`/api/runners/${held.runnerId}/hold`, { json: { for: '1h', reason: 'x', extend: true } });
    expect(noHold.status).toBe(409);
    const bad = await t.api(`/api/runners/${held.runnerId}/hold`, { json: { for: '2h', reason: 'x' } });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: { field: string } }).error.field).toBe('for');
    expect((await t.api('/api/runners/999999/hold', { json: { for: '1h', reason: 'x' } })).status).toBe(404);
    } finally {
      stop();
    }
  });

  it('jobs start asks before going past capacity: 409 over_capacity, then --force runs it beside', async () => {
    const r = await runner({ name: 'solo', labels: { pool: 'c' }, capacity: 1 });
    const a = await createJob({ agent: 'plain-job', labels: { pool: 'c' } });
    expect((await r.next('job.assign')).assignment.jobId).toBe(a.id);
    const b = await createJob({ agent: 'plain-job', labels: { pool: 'c' } });
    const res = await t.api(`/api/jobs/${b.id}/start`, { json: { runnerId: r.runnerId } });
    expect(res.status).toBe(409);
    expect(((await res.json()) as { error: { code: string; message: string } }).error).toMatchObject({ code: 'over_capacity', message: expect.stringMatching(/solo 1\/1/) });
    const forced = await t.api(`/api/jobs/${b.id}/start`, { json: { runnerId: r.runnerId, force: true } });
    expect(forced.status).toBe(200);
    expect((await r.next('job.assign')).assignment).toMatchObject({ jobId: b.id, force: true });
    const list = (await (await t.api('/api/runners?label=pool=c')).json()) as RunnerList;
    expect(list.runners.map((x) => [x.name, x.status, `${x.runningJobs.length}/${x.capacity}`])).toEqual([['solo', 'busy', '2/1']]);
    // Not queued any more → 409 not_queued; unknown → 404.
    expect((await t.api(`/api/jobs/${b.id}/start`, { json: {} })).status).toBe(409);
    expect((await t.api('/api/jobs/999999/start', { json: {} })).status).toBe(404);
  });

  it('revoking a runner ends its connection and its jobs’ tokens; it cannot reconnect', async () => {
    const { r, runnerId, credential } = await runnerWithCredential('doomed', { pool: 'rv' });
    const job = await createJob({ agent: 'plain-job', labels: { pool: 'rv' } });
    const a = (await r.next('job.assign')).assignment;
    started(r, job.id, 1);
    await r.next('ack');
    expect((await gateway(a.token)).status).toBe(200);

    const res = await t.api(`/api/runners/${runnerId}/revoke`, { json: {} });
    expect(res.status).toBe(200);
    expect((await res.json()) as Runner).toMatchObject({ status: 'revoked', revokedAt: expect.any(String) });
    await waitFor(async () => r.closed, (c) => c);
    expect([r.closeCode, r.closeReason]).toEqual([4403, 'runner revoked']);
    // The token dies at once; the job ends when the runner's lease has run out (the sweep).
    expect((await gateway(a.token)).status).toBe(401);
    await expect(FakeRunner.connect(t.url, runnerId, credential)).rejects.toThrow(/401/);
    await waitFor(async () => (await t.store.getJob(job.id))?.status, (s) => s === 'lost');
    expect(await t.store.getJob(job.id)).toMatchObject({ status: 'lost', endReason: 'runner_lost' });
    // The sweep writes the job row, then its status event: wait for the event too.
    const evs = await waitFor(async () => t.store.listEvents(job.id, 0, 100), (e) => e.at(-1)?.type === 'status');
    expect(evs.at(-1)).toMatchObject({ type: 'status', data: { status: 'lost', message: expect.stringMatching(/^runner doomed was revoked; its lease ran out \ds after its last heartbeat$/) } });

    // Revoked through another replica (straight in the store): its next heartbeat here closes it.
    const other = await runnerWithCredential('doomed-too', { pool: 'rv2' });
    await t.store.revokeRunner(other.runnerId, Date.now());
    other.r.send({ type: 'heartbeat', running: [] });
    await waitFor(async () => other.r.closed, (c) => c);
    expect([other.r.closeCode, other.r.closeReason]).toEqual([4403, 'runner revoked']);
    expect((await t.store.getRunner(other.runnerId))?.connected).toBe(false);

    // jobs start --force to the revoked runner says so (not "not connected", which suggests waiting).
    const queued = await createJob({ agent: 'plain-job', labels: { pool: 'nowhere' } });
    const forced = await t.api(`/api/jobs/${queued.id}/start`, { json: { runnerId, force: true } });
    expect(forced.status).toBe(409);
    expect(((await forced.json()) as { error: { code: string; message: string } }).error).toEqual(expect.objectContaining({ code: 'no_runner', message: `runner doomed (${runnerId}) was revoked: it can never take a job` }));
  });

  it('a revoked runner’s running job is retried elsewhere only once its lease has run out (last heartbeat + timeout), never beside it', async () => {
    const { r: a, runnerId } = await runnerWithCredential('revoked-busy', { pool: 'rvl' });
    const job = await createJob({ agent: 'retry-job', labels: { pool: 'rvl' } });
    const first = (await a.next('job.assign')).assignment;
    started(a, job.id, 1);
    await a.next('ack');
    const stopA = heartbeats(a, () => [{ jobId: job.id, attempt: 1 }]);
    const b = await runner({ name: 'stand-in', labels: { pool: 'rvl' } });
    const stopB = heartbeats(b, () => []);
    try {
      await new Promise((r) => setTimeout(r, 300));
      const res = await t.api(`/api/runners/${runnerId}/revoke`, { json: {} });
      expect(res.status).toBe(200);
      stopA();
      const lastBeat = (await t.store.getRunner(runnerId))!.lastHeartbeatAt!;
      expect((await gateway(first.token)).status).toBe(401);
      // Until its lease has surely run out, no other runner gets the job.
      const second = (await b.next('job.assign', () => true, 8000)).assignment;
      const assignedAt = Date.now();
      expect(second).toMatchObject({ jobId: job.id, attempt: 2 });
      expect(assignedAt - lastBeat).toBeGreaterThanOrEqual(TIMEOUT);
      expect(await t.store.getJob(job.id)).toMatchObject({ attempt: 2, runnerId: b.runnerId, retriesLeft: 0 });
      const statuses = (await t.store.listEvents(job.id, 0, 100)).filter((e) => e.type === 'status').map((e) => (e as JobEvent & { data: { message: string } }).data.message);
      // it says the runner was revoked (it read "silent for Ns", as if it had gone quiet by itself)
      expect(statuses.some((m) => /runner revoked-busy was revoked; its lease ran out \ds after its last heartbeat; back in the queue for a retry on any matching runner \(0 retries left\)/.test(m))).toBe(true);
      expect((await gateway(second.token)).status).toBe(200);
    } finally {
      stopA();
      stopB();
    }
  });

  it('a lost job is retried on another runner with a new attempt; the old runner is told to stop and refused', async () => {
    const { r: a, credential: credA } = await runnerWithCredential('first', { pool: 'rt' });
    const job = await createJob({ agent: 'retry-job', labels: { pool: 'rt' } });
    const first = (await a.next('job.assign')).assignment;
    expect(first.attempt).toBe(1);
    started(a, job.id, 1);
    await a.next('ack');
    const stopA = heartbeats(a, () => [{ jobId: job.id, attempt: 1 }]);
    await new Promise((r) => setTimeout(r, 300));
    // kill -9 of the runner: no close frame, no heartbeats.
    stopA();
    const lastBeat = (await t.store.getRunner(a.runnerId))!.lastHeartbeatAt!;
    a.kill();
    const b = await runner({ name: 'second', labels: { pool: 'rt' } });
    const stopB = heartbeats(b, () => [{ jobId: job.id, attempt: 2 }]);
    try {
      const second = (await b.next('job.assign', () => true, 8000)).assignment;
      const requeuedAt = Date.now();
      expect(second).toMatchObject({ jobId: job.id, attempt: 2 });
      // Within the timeout + one sweep (+ slack for a loaded machine).
      expect(requeuedAt - lastBeat).toBeGreaterThanOrEqual(TIMEOUT);
      expect(requeuedAt - lastBeat).toBeLessThan(TIMEOUT + SWEEP + 1500);
      const statuses = (await t.store.listEvents(job.id, 0, 100)).filter((e) => e.type === 'status').map((e) => (e as JobEvent & { data: { message: string } }).data.message);
      expect(statuses.some((m) => /runner first silent for \ds; back in the queue for a retry on any matching runner \(0 retries left\)/.test(m))).toBe(true);
      // The old attempt's token is dead at the gateway; the new one works.
      expect((await gateway(first.token)).status).toBe(401);
      expect((await gateway(second.token)).status).toBe(200);

      // The old runner comes back, reporting attempt 1: told to kill it; its late events are refused.
      const back = await FakeRunner.connect(t.url, a.runnerId, credA);
      runners.push(back);
      back.send({ type: 'hello', name: 'first', labels: { pool: 'rt' }, capacity: 1, version: 'test', running: [{ jobId: job.id, attempt: 1 }] });
      await back.next('welcome');
      expect(await back.next('job.cancel', (f) => f.jobId === job.id)).toMatchObject({ attempt: 1, reason: expect.stringMatching(/stale attempt/) });
      const before = (await t.store.listEvents(job.id, 0, 100)).length;
      back.send({ type: 'job.events', jobId: job.id, attempt: 1, events: [{ rseq: 2, at: at(), type: 'job.finished', data: { status: 'succeeded' } }] });
      expect(await back.next('job.cancel', (f) => f.jobId === job.id)).toMatchObject({ attempt: 1 });
      expect((await t.store.listEvents(job.id, 0, 100)).length).toBe(before);
      expect(await t.store.getJob(job.id)).toMatchObject({ status: 'assigned', attempt: 2, runnerId: b.runnerId });

      // No retries left: losing the second runner ends the job `lost`.
      started(b, job.id, 2);
      await b.next('ack');
      stopB();
      b.kill();
      await waitFor(() => t.store.getJob(job.id), (j) => j?.status === 'lost', 8000);
      expect(await t.store.getJob(job.id)).toMatchObject({ status: 'lost', endReason: 'runner_lost', attempt: 2 });
    } finally {
      stopB();
    }
  });

  it('bad runner input closes only that connection, with a reason', async () => {
    const good = await runner({ name: 'good', labels: { pool: 'bad' } });
    const cases: Array<[string, (r: FakeRunner) => void, number, RegExp]> = [
      ['malformed', (r) => r.ws.send('not json'), 4400, /not a JSON/],
      ['schema', (r) => r.send({ type: 'heartbeat', running: 'x' }), 4400, /running/],
      ['out of order', (r) => r.send({ type: 'hello', name: 'x', labels: {}, capacity: 1, version: 'v', running: [] }), 4400, /hello sent twice/],
      ['unknown job', (r) => r.send({ type: 'job.events', jobId: 987654, attempt: 1, events: [{ rseq: 1, at: at(), type: 'harness.started', data: { harness: 'x', pid: 1 } }] }), 4400, /unknown job 987654/],
      ['huge frame', (r) => r.ws.send('x'.repeat(100 * 1024)), 1009, /.*/],
    ];
    for (const [what, act, code, reason] of cases) {
      const r = await runner({ name: `bad-${what.replace(/ /g, '-')}` }); // runner names have no spaces
      act(r);
      await waitFor(async () => r.closed, (c) => c, 3000);
      expect([what, r.closeCode]).toEqual([what, code]);
      expect(r.closeReason).toMatch(reason);
    }
    // Before hello: out of order too.
    const early = await FakeRunner.start(t, { name: 'early' });
    runners.push(early);
    early.send({ type: 'heartbeat', running: [] });
    await waitFor(async () => early.closed, (c) => c, 3000);
    expect([early.closeCode, early.closeReason]).toEqual([4400, 'out of order: send hello before heartbeat']);
    // The good runner is untouched and still gets work.
    expect(good.closed).toBe(false);
    const job = await createJob({ agent: 'plain-job', labels: { pool: 'bad' } });
    expect((await good.next('job.assign')).assignment.jobId).toBe(job.id);
  });

  it('fleet list: slots, jobs, filters by label, status and role in three queries; detail with recent jobs', async () => {
    const gpu = await runner({ name: 'gpu-box', labels: { pool: 'f', gpu: 'a100', role: 'builder' }, capacity: 3 });
    await runner({ name: 'cpu-box', labels: { pool: 'f', role: 'reviewer' }, capacity: 2 });
    const j1 = await createJob({ agent: 'plain-job', labels: { gpu: 'a100' } });
    const j2 = await createJob({ agent: 'plain-job', labels: { gpu: 'a100' } });
    await gpu.next('job.assign');
    await gpu.next('job.assign');
    await createJob({ agent: 'plain-job', labels: { pool: 'nowhere' } });
    const all = (await (await t.api('/api/runners?label=pool=f')).json()) as RunnerList;
    expect(all.runners.map((r) => [r.name, r.status, `${r.runningJobs.length}/${r.capacity}`, r.runningJobs])).toEqual([
      ['gpu-box', 'busy', '2/3', [j1.id, j2.id]],
      ['cpu-box', 'online', '0/2', []],
    ]);
    expect(all.queued).toBe(1);
    const byRole = (await (await t.api('/api/runners?role=reviewer')).json()) as RunnerList;
    expect(byRole.runners.map((r) => r.name)).toEqual(['cpu-box']);
    const busy = (await (await t.api('/api/runners?status=busy&label=pool=f')).json()) as RunnerList;
    expect(busy.runners.map((r) => r.name)).toEqual(['gpu-box']);
    const badStatus = await t.api('/api/runners?status=sleepy');
    expect(badStatus.status).toBe(400);
    expect(((await badStatus.json()) as { error: { field: string } }).error.field).toBe('status');
    const detail = (await (await t.api(`/api/runners/${gpu.runnerId}`)).json()) as RunnerDetail;
    expect(detail.runner).toMatchObject({ name: 'gpu-box', runningJobs: [j1.id, j2.id] });
    expect(detail.recentJobs.map((j) => j.id)).toEqual([j2.id, j1.id]);
    expect((await t.api('/api/runners/999999')).status).toBe(404);
  });
});

describe('a newly registered runner can be held while it finishes its setup', () => {
  it('is provisioning, takes nothing, then takes work when the hold ends', async () => {
    const t = await startTestServer({ dispatchIntervalMs: 100, newRunnerHoldMs: 1200, agentsDirs: [SHIPPED_AGENTS, agentsDir] });
    try {
      const r = await FakeRunner.start(t, { name: 'fresh' });
      await r.hello({ name: 'fresh' });
      const list = (await (await t.api('/api/runners')).json()) as RunnerList;
      expect(list.runners[0]).toMatchObject({ status: 'provisioning', hold: { kind: 'provisioning' } });
      const job = (await (await t.api('/api/jobs', { json: { agent: 'plain-job' } })).json()) as Job;
      expect(await r.none('job.assign', 500)).toBe(true);
      expect((await r.next('job.assign', () => true, 3000)).assignment.jobId).toBe(job.id);
      await r.close();
    } finally {
      await t.close();
    }
  });
});
