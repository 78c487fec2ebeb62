// A runner's job.events over a real WebSocket, on SQLite and PostgreSQL: the ack means "every
// event up to here is stored", so a frame that skips rseqs closes the connection (4400) naming
// the gap, and the runner's reconnect resends from its ack with nothing lost; events after an
// attempt's job.finished are not stored, and the runner is told to drop them (job.cancel with
// discard, as for a stale attempt) instead of resending them forever.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Job } from '../protocol/index.js';
import { createTestDatabase } from '../store/test-pg.js';
import { FakeRunner, startTestServer, type TestServer } from './test-helpers.js';

const at = () => new Date().toISOString();
const msg = (rseq: number, text = `m${rseq}`) => ({ rseq, at: at(), type: 'message', data: { role: 'assistant', text } });
const started = (rseq: number) => ({ rseq, at: at(), type: 'harness.started', data: { harness: 'command', pid: 7 } });
const finished = (rseq: number) => ({ rseq, at: at(), type: 'job.finished', data: { status: 'succeeded', result: { summary: 'done' } } });

async function waitFor<T>(fn: () => Promise<T>, ok: (v: T) => boolean, timeoutMs = 5000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  while (true) {
    const v = await fn();
    if (ok(v)) return v;
    if (Date.now() > deadline) throw new Error(`condition not met in ${timeoutMs} ms: ${JSON.stringify(v)}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

const pg = await createTestDatabase();
afterAll(async () => {
  await pg?.drop();
});

describe.each([['sqlite', null], ...(pg ? [['postgres', pg.url]] : [])] as Array<[string, string | null]>)('runner job.events: gaps and events after job.finished (%s)', (_dialect, databaseUrl) => {
  let t: TestServer;
  const runners: FakeRunner[] = [];
  beforeAll(async () => {
    t = await startTestServer({ dispatchIntervalMs: 200, ...(databaseUrl ? { databaseUrl } : {}) });
  });
  afterEach(async () => {
    for (const r of runners.splice(0)) await r.close();
    for (const j of await t.store.listJobs({ limit: 200 })) {
      if (['queued', 'assigned', 'running'].includes(j.status)) await t.store.transitionJob(j.id, null, [j.status], 'cancelled', Date.now());
    }
  });
  afterAll(() => t.close());

  /** A registered runner that said hello and got a job assigned. */
  const withJob = async () => {
    const r = await FakeRunner.start(t);
    runners.push(r);
    await r.hello();
    const res = await t.api('/api/jobs', { json: { agent: 'test-fixer', input: { repo: 'x' } } });
    expect(res.status).toBe(201);
    const job = (await res.json()) as Job;
    const { assignment } = await r.next('job.assign');
    return { r, jobId: job.id, attempt: assignment.attempt };
  };
  const runnerEvents = async (jobId: number) => (await t.store.listEvents(jobId, 0, 100)).filter((e) => e.type !== 'status').map((e) => (e.type === 'message' ? e.data.text : e.type));

  it('events after the attempt’s job.finished are not stored: acked up to the job.finished, and the runner is told to drop them', async () => {
    const { r, jobId, attempt } = await withJob();
    r.send({ type: 'job.events', jobId, attempt, events: [started(1), finished(2)] });
    expect((await r.next('ack')).upTo).toBe(2);
    await waitFor(() => t.store.getJob(jobId), (j) => j?.status === 'succeeded');
    r.send({ type: 'job.events', jobId, attempt, events: [msg(3, 'after the end')] });
    expect(await r.next('ack')).toEqual({ type: 'ack', jobId, attempt, upTo: 2 });
    const cancel = await r.next('job.cancel');
    expect(cancel).toEqual({ type: 'job.cancel', jobId, attempt, reason: 'attempt 1 ended with job.finished (rseq 2): 1 later event refused', discard: true });
    expect(await runnerEvents(jobId)).toEqual(['harness.started', 'job.finished']);
    // Not a protocol fault: the connection stays open.
    await new Promise((res) => setTimeout(res, 100));
    expect(r.closed).toBe(false);
    await r.close();
    // In the same frame as the job.finished too.
    const second = await withJob();
    second.r.send({ type: 'job.events', jobId: second.jobId, attempt: second.attempt, events: [started(1), finished(2), msg(3, 'x'), msg(4, 'y')] });
    expect((await second.r.next('ack')).upTo).toBe(2);
    expect((await second.r.next('job.cancel')).reason).toBe('attempt 1 ended with job.finished (rseq 2): 2 later events refused');
    expect(await runnerEvents(second.jobId)).toEqual(['harness.started', 'job.finished']);
    expect((await t.store.getJob(second.jobId))?.status).toBe('succeeded');
    expect(second.r.closed).toBe(false);
  });

  it('a frame that skips rseqs after the stored ones closes the connection (4400) naming the gap; the resend from the ack is stored in order', async () => {
    const { r, jobId, attempt } = await withJob();
    r.send({ type: 'job.events', jobId, attempt, events: [started(1), msg(2)] });
    expect((await r.next('ack')).upTo).toBe(2);
    r.send({ type: 'job.events', jobId, attempt, events: [msg(5), finished(6)] });
    const err = await r.next('error');
    expect(err.message).toBe(`gap: job ${jobId} attempt 1 events start at rseq 5, rseq 3..4 never arrived`);
    await waitFor(async () => r.closed, (c) => c);
    expect(r.closeCode).toBe(4400);
    expect(r.closeReason).toBe(err.message);
    expect(r.frames.filter((f) => f.type === 'ack')).toEqual([]);
    expect(await runnerEvents(jobId)).toEqual(['harness.started', 'm2']);
    expect((await t.store.getJob(jobId))?.status).toBe('running');
    // The runner reconnects and resends everything after its ack: nothing is lost, in order.
    const again = await FakeRunner.connect(t.url, r.runnerId, r.credential!);
    runners.push(again);
    await again.hello({ running: [{ jobId, attempt }] });
    again.send({ type: 'job.events', jobId, attempt, events: [msg(3), msg(4), msg(5), finished(6)] });
    expect((await again.next('ack')).upTo).toBe(6);
    expect(await runnerEvents(jobId)).toEqual(['harness.started', 'm2', 'm3', 'm4', 'm5', 'job.finished']);
    expect((await t.store.getJob(jobId))?.status).toBe('succeeded');
  });

  it('a frame that skips an rseq inside it closes the connection (4400) naming the gap, and stores nothing of it', async () => {
    const { r, jobId, attempt } = await withJob();
    r.send({ type: 'job.events', jobId, attempt, events: [started(1), msg(2), msg(5)] });
    expect((await r.next('error')).message).toBe('gap: events[2].rseq 5 follows rseq 2; rseq 3..4 missing: send each job\'s events in consecutive rseq');
    await waitFor(async () => r.closed, (c) => c);
    expect(r.closeCode).toBe(4400);
    expect(await runnerEvents(jobId)).toEqual([]);
  });
});
