// A frozen runner (kill -STOP) and the liveness sweep, through the real server with fake runners
// on real WebSockets. The sweep goes by heartbeats (store sweepStaleRunners), but the hub closed
// only sockets silent by any frame: a runner whose job output arrived after its last heartbeat
// had its job requeued while its socket stayed open and ready, and the dispatcher gave the retry
// straight back to it (then lost it for good). And a job assigned to a runner that froze before
// starting it ended `lost`, a retry used, instead of going back to the queue.
import { mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Job } from '../protocol/index.js';
import { CLOSE_CODES } from './hub.js';
import { FakeRunner, SHIPPED_AGENTS, startTestServer, type TestServer, waitFor } from './test-helpers.js';

const at = () => new Date().toISOString();
const TIMEOUT = 1500;

let agentsDir = '';
beforeAll(async () => {
  agentsDir = await mkdtemp(join(tmpdir(), 'flotilla-silent-agents-'));
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
  if (agentsDir) await rm(agentsDir, { recursive: true, force: true });
});

describe('a silent runner and the liveness sweep', () => {
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
  const every = (ms: number, fn: () => void) => {
    const timer = setInterval(fn, ms);
    const stop = () => clearInterval(timer);
    timers.push(stop);
    return stop;
  };
  const heartbeats = (r: FakeRunner, running: () => { jobId: number; attempt: number }[]) => every(100, () => !r.closed && r.send({ type: 'heartbeat', running: running() }));
  const createJob = async (body: Record<string, unknown>): Promise<Job> => {
    const res = await t.api('/api/jobs', { json: body });
    expect(res.status).toBe(201);
    return (await res.json()) as Job;
  };
  const getJob = async (id: number) => (await (await t.api(`/api/jobs/${id}`)).json()) as Job;
  const statusEvents = async (id: number) =>
    (await t.store.listEvents(id, 0, 1000)).filter((e) => e.type === 'status').map((e) => e.data as { status: string; message: string; runnerId?: number; lostAttempt?: number });

  it('a runner that sends job output but no heartbeat past the timeout is closed and its retry goes to the idle runner, never back to it', async () => {
    const a = await runner('chatty-a', { pool: 'chatty' });
    const job = await createJob({ agent: 'retry-job', labels: { pool: 'chatty' } });
    expect((await a.next('job.assign')).assignment).toMatchObject({ jobId: job.id, attempt: 1 });
    a.send({ type: 'job.events', jobId: job.id, attempt: 1, events: [{ rseq: 1, at: at(), type: 'harness.started', data: { harness: 'command', pid: 1 } }] });
    await a.next('ack');
    expect(await getJob(job.id)).toMatchObject({ status: 'running', runnerId: a.runnerId });

    // B is idle and alive (heartbeats); A sends its job's output every 100 ms but no heartbeat.
    const b = await runner('idle-b', { pool: 'chatty' });
    heartbeats(b, () => []);
    let rseq = 1;
    every(100, () => !a.closed && a.send({ type: 'job.events', jobId: job.id, attempt: 1, events: [{ rseq: ++rseq, at: at(), type: 'log', data: { stream: 'stdout', line: `line ${rseq}` } }] }));

    // The sweep requeues the job (a retry) and A is closed as silent: its frames do not count.
    const assignB = await b.next('job.assign', () => true, 8000);
    expect(assignB.assignment).toMatchObject({ jobId: job.id, attempt: 2 });
    expect(a.frames.filter((f) => f.type === 'job.assign')).toEqual([]);
    await waitFor(async () => a.closed, (closed) => closed, 3000);
    expect(a.closeCode).toBe(CLOSE_CODES.silent);
    expect(await getJob(job.id)).toMatchObject({ status: 'assigned', runnerId: b.runnerId, attempt: 2 });
    const events = await statusEvents(job.id);
    const requeued = events.find((e) => e.status === 'queued' && e.lostAttempt === 1);
    expect(requeued?.message).toMatch(/^runner chatty-a silent for \d+s; back in the queue for a retry on any matching runner \(0 retries left\)$/);
    // Never assigned to A again.
    expect(events.filter((e) => e.status === 'assigned').map((e) => e.runnerId)).toEqual([a.runnerId, b.runnerId]);
    await t.api(`/api/jobs/${job.id}/cancel`, { method: 'POST' });
  });

  it('a job assigned to a runner that froze before starting it goes back to the queue with no retry used, to the idle runner', async () => {
    const a = await runner('frozen-a', { pool: 'frozen' });
    const job = await createJob({ agent: 'plain-job', labels: { pool: 'frozen' } });
    expect((await t.store.getJob(job.id))?.retriesLeft).toBe(0);
    expect((await a.next('job.assign')).assignment).toMatchObject({ jobId: job.id, attempt: 1 });
    // A froze: no job.accepted, no harness.started, no heartbeat. B is idle and alive.
    const b = await runner('idle-b2', { pool: 'frozen' });
    heartbeats(b, () => []);

    const assignB = await b.next('job.assign', () => true, 8000);
    expect(assignB.assignment).toMatchObject({ jobId: job.id, attempt: 2 });
    await waitFor(async () => a.closed, (closed) => closed, 3000);
    expect(a.closeCode).toBe(CLOSE_CODES.silent);
    const now = await getJob(job.id);
    expect(now).toMatchObject({ status: 'assigned', runnerId: b.runnerId, attempt: 2 });
    expect((await t.store.getJob(job.id))?.retriesLeft).toBe(0);
    const events = await statusEvents(job.id);
    expect(events.map((e) => e.status)).not.toContain('lost');
    const requeued = events.find((e) => e.status === 'queued' && e.runnerId === a.runnerId);
    expect(requeued?.message).toMatch(/^runner frozen-a silent for \d+s; it never started the job: back in the queue, no retry used$/);
    expect(requeued?.lostAttempt).toBeUndefined();
    expect(a.frames.filter((f) => f.type === 'job.assign')).toEqual([]);
    await t.api(`/api/jobs/${job.id}/cancel`, { method: 'POST' });
  });
});
