import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Job, JobEvent, Runner } from '../protocol/index.js';
import { hashToken } from '../core/tokens.js';
import { createTestDatabase } from '../store/test-pg.js';
import { FakeRunner, readSse, startTestServer, type TestServer } from './test-helpers.js';

const at = () => new Date().toISOString();

async function createJob(t: TestServer, body: Record<string, unknown>): Promise<Job> {
  const res = await t.api('/api/jobs', { json: body });
  expect(res.status).toBe(201);
  return (await res.json()) as Job;
}

async function waitFor<T>(fn: () => Promise<T>, ok: (v: T) => boolean, timeoutMs = 5000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  while (true) {
    const v = await fn();
    if (ok(v)) return v;
    if (Date.now() > deadline) throw new Error(`condition not met in ${timeoutMs} ms: ${JSON.stringify(v)}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

// PostgreSQL too when reachable (createTestDatabase throws under CI=true when it is not).
const pg = await createTestDatabase();
afterAll(async () => {
  await pg?.drop();
});

describe.each([['sqlite', null], ...(pg ? [['postgres', pg.url]] : [])] as Array<[string, string | null]>)('runner hub and dispatcher (%s)', (_dialect, databaseUrl) => {
  let t: TestServer;
  const runners: FakeRunner[] = [];
  beforeAll(async () => {
    t = await startTestServer({ dispatchIntervalMs: 200, ...(databaseUrl ? { databaseUrl } : {}) });
  });
  afterEach(async () => {
    for (const r of runners.splice(0)) await r.close();
    // Leave no active job behind for the next test.
    for (const j of await t.store.listJobs({ limit: 200 })) {
      if (['queued', 'assigned', 'running'].includes(j.status)) await t.store.transitionJob(j.id, null, [j.status], 'cancelled', Date.now());
    }
  });
  afterAll(() => t.close());

  const runner = async (o: Parameters<typeof FakeRunner.start>[1] = {}) => {
    const r = await FakeRunner.start(t, o);
    runners.push(r);
    return r;
  };

  it('refuses a WebSocket with a wrong credential (401)', async () => {
    await expect(FakeRunner.connect(t.url, 1, 'flc_wrong')).rejects.toThrow(/401/);
  });

  it('welcomes a runner and dispatches a matching job with the agent definition and a live job token', async () => {
    const r = await runner({ name: 'linux-1', labels: { os: 'linux' } });
    const welcome = await r.hello({ name: 'linux-1', labels: { os: 'linux' }, capacity: 1 });
    expect(welcome).toMatchObject({ runnerId: r.runnerId, heartbeatIntervalMs: 5000 });
    const job = await createJob(t, { agent: 'test-fixer', input: { repo: 'examples/calc' } });
    const { assignment } = await r.next('job.assign');
    expect(assignment).toMatchObject({ jobId: job.id, rootId: job.id, attempt: 1, input: { repo: 'examples/calc' }, resumeSessionId: null });
    expect(assignment.agent.name).toBe('test-fixer');
    expect(assignment.agent.promptText).toContain('{{input.repo}}');
    expect(assignment.token).toMatch(/^flj_/);
    const row = await t.store.findJobByTokenHash(hashToken(assignment.token));
    expect(row).toMatchObject({ id: job.id, status: 'assigned', runnerId: r.runnerId, attempt: 1 });
    const runnersList = (await (await t.api('/api/runners')).json()) as { runners: Runner[] };
    expect(runnersList.runners.find((x) => x.id === r.runnerId)).toMatchObject({ status: 'busy', runningJobs: [job.id], version: 'test', labels: { os: 'linux' } });
  });

  it('does not dispatch a job whose selector no runner matches, says so once, and dispatches when one with the label connects', async () => {
    const plain = await runner({ name: 'plain' });
    await plain.hello({ name: 'plain' });
    const job = await createJob(t, { agent: 'gpu-job', input: {} });
    // Several periodic passes (200 ms) go by.
    expect(await plain.none('job.assign', 900)).toBe(true);
    // The note is advisory and throttled (at most once a second): wait for it, then make sure
    // later passes do not repeat it.
    const noteEvents = async () => (await t.store.listEvents(job.id, 0, 100)).filter((e) => e.type === 'status' && /no runner matches/.test(e.data.message ?? ''));
    for (let i = 0; i < 50 && (await noteEvents()).length === 0; i++) await new Promise((res) => setTimeout(res, 100));
    await new Promise((res) => setTimeout(res, 1500));
    const notes = await noteEvents();
    expect(notes.map((e) => (e.type === 'status' ? e.data.message : ''))).toEqual(['no runner matches gpu=a100, waiting']);
    // A runner whose registration token carries gpu=a100 (its own hello labels do not) gets it.
    const gpu = await runner({ name: 'gpu-1', tokenLabels: { gpu: 'a100' } });
    await gpu.hello({ name: 'gpu-1', labels: { os: 'linux' } });
    const { assignment } = await gpu.next('job.assign');
    expect(assignment.jobId).toBe(job.id);
    expect((await t.store.getRunner(gpu.runnerId))?.labels).toEqual({ gpu: 'a100', os: 'linux' });
    expect(await plain.none('job.assign', 100)).toBe(true);
  });

  it('stores events, acks them, dedupes resends, moves the job, and SSE replays after Last-Event-ID with no gap or duplicate', async () => {
    const r = await runner();
    await r.hello();
    const job = await createJob(t, { agent: 'test-fixer', input: { repo: 'x' } });
    const { assignment: a } = await r.next('job.assign');
    const ev1 = { rseq: 1, at: at(), type: 'progress', data: { phase: 'workspace', message: 'cloning x' } };
    const ev2 = { rseq: 2, at: at(), type: 'harness.started', data: { harness: 'claude-code', pid: 1234, sessionId: 'sess-1' } };
    const ev3 = { rseq: 3, at: at(), type: 'tool.call', data: { id: 'toolu_1', name: 'Bash', input: { command: 'npm test' } } };
    r.send({ type: 'job.events', jobId: job.id, attempt: a.attempt, events: [ev1, ev2] });
    expect((await r.next('ack')).upTo).toBe(2);
    const running = await t.store.getJob(job.id);
    expect(running).toMatchObject({ status: 'running', sessionId: 'sess-1' });
    expect(running!.startedAt).not.toBeNull();
    // Resend 1-2 with a new 3: only 3 is stored.
    r.send({ type: 'job.events', jobId: job.id, attempt: a.attempt, events: [ev1, ev2, ev3] });
    expect((await r.next('ack')).upTo).toBe(3);

    // Follow live: the stream stays open while the job runs.
    const live = await t.api(`/api/jobs/${job.id}/events`);
    expect(live.headers.get('content-type')).toMatch(/text\/event-stream/);
    const livePromise = readSse(live, { timeoutMs: 8000 });

    const ev4 = { rseq: 4, at: at(), type: 'message', data: { role: 'assistant', text: 'All 4 tests pass.' } };
    const ev5 = { rseq: 5, at: at(), type: 'job.finished', data: { status: 'succeeded', sessionId: 'sess-1', result: { summary: 'fixed', branch: 'flotilla/job-1' } } };
    r.send({ type: 'job.events', jobId: job.id, attempt: a.attempt, events: [ev4, ev5] });
    expect((await r.next('ack')).upTo).toBe(5);

    const done = await waitFor(() => t.store.getJob(job.id), (j) => j?.status === 'succeeded');
    expect(done).toMatchObject({ endReason: null, error: null, result: { summary: 'fixed', branch: 'flotilla/job-1' } });
    expect(await t.store.findJobByTokenHash(hashToken(a.token))).toBeNull();

    const all = await t.store.listEvents(job.id, 0, 100);
    // queued + assigned (server) then the runner's 5, numbered 1..7.
    expect(all.map((e) => e.seq)).toEqual([1, 2, 3, 4, 5, 6, 7]);
    expect(all.map((e) => e.type)).toEqual(['status', 'status', 'progress', 'harness.started', 'tool.call', 'message', 'job.finished']);

    const liveMsgs = await livePromise;
    expect(liveMsgs.filter((m) => m.event === 'job').map((m) => Number(m.id))).toEqual([1, 2, 3, 4, 5, 6, 7]);
    expect(liveMsgs.at(-1)).toEqual({ event: 'end', data: '{"status":"succeeded"}' });

    // Replay in two parts with Last-Event-ID: no gap, no duplicate.
    const part1 = await readSse(await t.api(`/api/jobs/${job.id}/events`), { stopAfter: 3 });
    const last = part1.at(-1)!.id!;
    expect(last).toBe('3');
    const part2 = await readSse(await t.api(`/api/jobs/${job.id}/events`, { headers: { 'last-event-id': last } }));
    const seqs = [...part1, ...part2].filter((m) => m.event === 'job').map((m) => Number(m.id));
    expect(seqs).toEqual([1, 2, 3, 4, 5, 6, 7]);
    const finished = JSON.parse(part2.find((m) => m.id === '7')!.data) as JobEvent;
    expect(finished).toMatchObject({ seq: 7, jobId: job.id, type: 'job.finished' });
    expect(part2.at(-1)).toEqual({ event: 'end', data: '{"status":"succeeded"}' });
    // ?after= works the same way.
    const part3 = await readSse(await t.api(`/api/jobs/${job.id}/events?after=6`));
    expect(part3.map((m) => m.id ?? m.event)).toEqual(['7', 'end']);
    expect((await t.api(`/api/jobs/${job.id}/events?after=x`)).status).toBe(400);
    expect((await t.api(`/api/jobs/99999/events`)).status).toBe(404);
  });

  it('refuses events from a stale attempt and tells the runner to cancel it', async () => {
    const r = await runner();
    await r.hello();
    const job = await createJob(t, { agent: 'test-fixer', input: { repo: 'x' } });
    const first = (await r.next('job.assign')).assignment;
    r.send({ type: 'job.rejected', jobId: job.id, attempt: first.attempt, reason: 'at capacity' });
    // Held for 1 s after a rejection, then the periodic pass assigns attempt 2 to it again.
    const second = (await r.next('job.assign', () => true, 4000)).assignment;
    expect(second).toMatchObject({ jobId: job.id, attempt: 2 });
    expect(second.token).not.toBe(first.token);
    expect(await t.store.findJobByTokenHash(hashToken(first.token))).toBeNull();
    const before = await t.store.listEvents(job.id, 0, 100);
    r.send({ type: 'job.events', jobId: job.id, attempt: 1, events: [{ rseq: 1, at: at(), type: 'log', data: { stream: 'stdout', line: 'old' } }] });
    const cancel = await r.next('job.cancel');
    expect(cancel).toMatchObject({ jobId: job.id, attempt: 1 });
    expect(cancel.reason).toMatch(/stale/);
    expect(await t.store.listEvents(job.id, 0, 100)).toEqual(before);
    const refusedNote = before.find((e) => e.type === 'status' && /refused it \(at capacity\)/.test(e.data.message ?? ''));
    expect(refusedNote).toBeDefined();
  });

  it('job.finished failed → failed with reason and error; the freed runner gets the next queued job', async () => {
    const r = await runner();
    await r.hello({ capacity: 1 });
    const j1 = await createJob(t, { agent: 'test-fixer', input: { repo: 'one' } });
    const j2 = await createJob(t, { agent: 'test-fixer', input: { repo: 'two' } });
    const a1 = (await r.next('job.assign')).assignment;
    expect(a1.jobId).toBe(j1.id);
    expect(await r.none('job.assign', 500)).toBe(true);
    r.send({
      type: 'job.events',
      jobId: j1.id,
      attempt: 1,
      events: [{ rseq: 1, at: at(), type: 'job.finished', data: { status: 'failed', reason: 'workspace', error: 'no such path: one' } }],
    });
    const a2 = (await r.next('job.assign')).assignment;
    expect(a2.jobId).toBe(j2.id);
    const failed = (await (await t.api(`/api/jobs/${j1.id}`)).json()) as Job;
    expect(failed).toMatchObject({ status: 'failed', endReason: 'workspace', error: 'no such path: one' });
    expect(failed.finishedAt).not.toBeNull();
  });

  it('cancels a queued job, and a running one: runner gets job.cancel, the job token dies at the gateway', async () => {
    const q = await createJob(t, { agent: 'gpu-job', input: {} });
    const qc = await t.api(`/api/jobs/${q.id}/cancel`, { method: 'POST' });
    expect(qc.status).toBe(200);
    expect((await qc.json()) as Job).toMatchObject({ status: 'cancelled', endReason: 'cancelled' });
    const again = await t.api(`/api/jobs/${q.id}/cancel`, { method: 'POST' });
    expect(again.status).toBe(409);
    expect(((await again.json()) as { error: { code: string } }).error.code).toBe('not_cancellable');

    const r = await runner();
    await r.hello();
    const job = await createJob(t, { agent: 'test-fixer', input: { repo: 'x' } });
    const a = (await r.next('job.assign')).assignment;
    r.send({ type: 'job.events', jobId: job.id, attempt: 1, events: [{ rseq: 1, at: at(), type: 'harness.started', data: { harness: 'claude-code', pid: 1 } }] });
    await r.next('ack');
    const gw = (token: string) =>
      fetch(`${t.url}/v1/messages`, {
        method: 'POST',
        headers: { 'x-api-key': token, 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
        body: JSON.stringify({ model: 'claude-sonnet-4-5', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] }),
      });
    expect((await gw(a.token)).status).toBe(200);
    const res = await t.api(`/api/jobs/${job.id}/cancel`, { method: 'POST' });
    expect(res.status).toBe(200);
    // `cancelling` (token dead at once) until the runner reports the process tree gone.
    expect((await res.json()) as Job).toMatchObject({ status: 'cancelling', endReason: 'cancelled' });
    expect(await r.next('job.cancel')).toMatchObject({ jobId: job.id, attempt: 1 });
    expect(await t.store.findJobByTokenHash(hashToken(a.token))).toBeNull();
    expect((await gw(a.token)).status).toBe(401);
    const evs = await t.store.listEvents(job.id, 0, 100);
    expect(evs.at(-1)).toMatchObject({ type: 'status', data: { status: 'cancelling', runnerId: r.runnerId } });
    // A second cancel repeats job.cancel and keeps the status.
    const twice = await t.api(`/api/jobs/${job.id}/cancel`, { method: 'POST' });
    expect((await twice.json()) as Job).toMatchObject({ status: 'cancelling' });
    expect(await r.next('job.cancel')).toMatchObject({ jobId: job.id, attempt: 1 });
    // The runner's job.finished (sent once its tree is gone) ends it.
    r.send({ type: 'job.events', jobId: job.id, attempt: 1, events: [{ rseq: 2, at: at(), type: 'job.finished', data: { status: 'cancelled', reason: 'cancelled' } }] });
    await r.next('ack');
    expect((await t.store.getJob(job.id))).toMatchObject({ status: 'cancelled', endReason: 'cancelled' });
  });

  it('answers a bad frame with an error frame naming the problem, then closes that connection (4400)', async () => {
    const r = await runner();
    r.send({ type: 'hello', name: 'x', labels: {}, capacity: 9, version: 'v', running: [] });
    expect((await r.next('error')).message).toMatch(/capacity/);
    await waitFor(async () => r.closed, (c) => c);
    expect(r.closeCode).toBe(4400);
    expect(r.closeReason).toMatch(/capacity/);
    // The runner may reconnect with the same credential and carry on.
    const again = await runner();
    const welcome = await again.hello();
    expect(welcome.runnerId).toBe(again.runnerId);
    expect(again.closed).toBe(false);
  });

  it('on hello, tells the runner to cancel attempts the server no longer considers live', async () => {
    const reg = await t.api('/api/runners/register', { token: null, json: { token: await t.regToken(), name: 'fake' } });
    const { runnerId, credential } = (await reg.json()) as { runnerId: number; credential: string };
    const first = await FakeRunner.connect(t.url, runnerId, credential);
    runners.push(first);
    await first.hello();
    const job = await createJob(t, { agent: 'test-fixer', input: { repo: 'x' } });
    await first.next('job.assign');
    await t.api(`/api/jobs/${job.id}/cancel`, { method: 'POST' });
    await first.next('job.cancel');
    // Reconnect (same credential, a new socket) reporting the cancelled job and an unknown one.
    const row = await t.store.getRunner(runnerId);
    expect(row?.connected).toBe(true);
    const r = await FakeRunner.connect(t.url, runnerId, credential);
    runners.push(r);
    r.send({ type: 'hello', name: 'fake', labels: {}, capacity: 1, version: 'test', running: [{ jobId: job.id, attempt: 1 }, { jobId: 999999, attempt: 1 }] });
    await r.next('welcome');
    expect((await r.next('job.cancel', (f) => f.jobId === job.id)).reason).toMatch(/cancelled/);
    expect((await r.next('job.cancel', (f) => f.jobId === 999999)).reason).toMatch(/unknown/);
  });
});
