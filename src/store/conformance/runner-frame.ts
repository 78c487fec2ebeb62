import { expect, it } from 'vitest';
import type { EventBody, JobResult } from '../../protocol/index.js';
import type { FrameEvent, FrameMove } from '../dispatch-types.js';
import type { JobRow, Store } from '../types.js';
import { T, fakeHash, newJob, newRunner, type Harness } from './harness.js';

const at = (ms: number) => new Date(ms).toISOString();
const msg = (text: string): EventBody => ({ type: 'message', data: { role: 'assistant', text } });
const started = (rseq: number, sessionId?: string): FrameEvent => ({ type: 'harness.started', data: { harness: 'command', pid: 42, ...(sessionId ? { sessionId } : {}) }, rseq, at: at(T + rseq) });
const finished = (rseq: number, result: JobResult): FrameEvent => ({ type: 'job.finished', data: { status: 'succeeded', result }, rseq, at: at(T + rseq) });
const succeed = (result: JobResult, extra: Partial<FrameMove> = {}): FrameMove => ({ from: ['assigned', 'running', 'cancelling'], to: 'succeeded', endReason: null, error: null, result, ...extra });

/** A queued job claimed by a new runner: attempt 1, token hash `token`. */
async function claimed(s: Store, token = fakeHash('t')): Promise<{ job: JobRow; runnerId: number; token: string }> {
  const r = await newRunner(s);
  const j = await newJob(s);
  const job = (await s.claimJobById(j.id, { id: r.id, labels: {} }, token, T))!;
  return { job, runnerId: r.id, token };
}

/** store.applyRunnerFrame (store/runner-frame.ts): a runner's events and the status change they carry, in one store call. */
export function runnerFrameTests(h: Harness): void {
  it('applyRunnerFrame: a frame that starts and ends the job stores its events and ends it in one call; a resend adds nothing', async () => {
    const s = await h.open();
    const { job, runnerId, token } = await claimed(s);
    await s.appendServerEvent(job.id, { type: 'status', data: { status: 'assigned' } }, T);
    const frame = { jobId: job.id, attempt: 1, runnerId, events: [finished(3, { summary: 'done' }), started(1, 'sess-1'), { ...msg('hi'), rseq: 2, at: at(T + 2) }] };
    const out = await s.applyRunnerFrame({ ...frame, move: succeed({ summary: 'done' }, { sessionId: 'sess-1', startedAtIfUnset: T + 50 }) }, T + 60);
    // Stored in rseq order after the server's seq 1: started 2, message 3, finished 4.
    expect(out).toMatchObject({ accepted: true, upTo: 3 });
    if (!out.accepted) throw new Error('refused');
    expect(out.stored.map((e) => [e.seq, e.type])).toEqual([[2, 'harness.started'], [3, 'message'], [4, 'job.finished']]);
    expect(out.stored[1]).toEqual({ seq: 3, jobId: job.id, at: at(T + 2), ...msg('hi') });
    expect(await s.listEvents(job.id, 0, 10)).toEqual([expect.objectContaining({ seq: 1, type: 'status' }), ...out.stored]);
    expect(out.moved).toMatchObject({ id: job.id, status: 'succeeded', endReason: null, error: null, result: { summary: 'done' }, sessionId: 'sess-1', startedAt: T + 50, finishedAt: T + 60, attempt: 1 });
    expect(await s.getJob(job.id)).toEqual(out.moved);
    // The job's token died with it.
    expect(await s.findJobByTokenHash(token)).toBeNull();
    // A resend (the ack was lost): nothing stored, the move no longer applies, same upTo.
    expect(await s.applyRunnerFrame({ ...frame, move: succeed({ summary: 'again' }) }, T + 70)).toEqual({ accepted: true, stored: [], upTo: 3, moved: null });
    expect((await s.getJob(job.id))?.result).toEqual({ summary: 'done' });
    expect((await s.listEvents(job.id, 0, 10)).length).toBe(4);
  });

  it('applyRunnerFrame: harness.started moves assigned → running; a later end keeps started_at (startedAtIfUnset)', async () => {
    const s = await h.open();
    const { job, runnerId } = await claimed(s);
    const one = await s.applyRunnerFrame({ jobId: job.id, attempt: 1, runnerId, events: [started(1, 'sess-a')], move: { from: ['assigned'], to: 'running', startedAt: T + 5, sessionId: 'sess-a' } }, T + 5);
    expect(one).toMatchObject({ accepted: true, upTo: 1, moved: { status: 'running', startedAt: T + 5, sessionId: 'sess-a', finishedAt: null } });
    // Events only: no move.
    expect(await s.applyRunnerFrame({ jobId: job.id, attempt: 1, runnerId, events: [{ ...msg('working'), rseq: 2, at: at(T + 6) }] }, T + 6)).toMatchObject({ accepted: true, upTo: 2, moved: null });
    const end = await s.applyRunnerFrame({ jobId: job.id, attempt: 1, runnerId, events: [finished(3, {})], move: succeed({}, { startedAtIfUnset: T + 99 }) }, T + 100);
    expect(end).toMatchObject({ accepted: true, upTo: 3, moved: { status: 'succeeded', startedAt: T + 5, finishedAt: T + 100, sessionId: 'sess-a' } });
    expect((await s.listEvents(job.id, 0, 10)).map((e) => e.seq)).toEqual([1, 2, 3]);
  });

  it('applyRunnerFrame: refused with nothing stored for an unknown job, another runner, a stale attempt, a lost or queued job', async () => {
    const s = await h.open();
    const { job, runnerId } = await claimed(s);
    const other = await newRunner(s, {}, 'other');
    const ev = [{ ...msg('x'), rseq: 1, at: at(T) }];
    expect(await s.applyRunnerFrame({ jobId: job.id + 100, attempt: 1, runnerId, events: ev }, T)).toEqual({ accepted: false, job: null });
    expect(await s.applyRunnerFrame({ jobId: job.id, attempt: 1, runnerId: other.id, events: ev, move: succeed({}) }, T)).toEqual({ accepted: false, job: { runnerId, status: 'assigned', attempt: 1 } });
    expect(await s.applyRunnerFrame({ jobId: job.id, attempt: 2, runnerId, events: ev }, T)).toEqual({ accepted: false, job: { runnerId, status: 'assigned', attempt: 1 } });
    expect(await s.getJob(job.id)).toMatchObject({ status: 'assigned' });
    await s.transitionJob(job.id, 1, ['assigned'], 'lost', T + 1, { endReason: 'runner_lost' });
    expect(await s.applyRunnerFrame({ jobId: job.id, attempt: 1, runnerId, events: ev }, T)).toEqual({ accepted: false, job: { runnerId, status: 'lost', attempt: 1 } });
    const { job: j2, runnerId: r2 } = await claimed(s);
    expect(await s.requeueJob(j2.id, 1, T + 2)).toBe(true);
    // Requeued: its runner is cleared, so it is no longer this runner's.
    expect(await s.applyRunnerFrame({ jobId: j2.id, attempt: 1, runnerId: r2, events: ev }, T)).toEqual({ accepted: false, job: { runnerId: null, status: 'queued', attempt: 1 } });
    expect(await s.listEvents(job.id, 0, 10)).toEqual([]);
    expect(await s.listEvents(j2.id, 0, 10)).toEqual([]);
    await expect(s.applyRunnerFrame({ jobId: job.id, attempt: 1, runnerId, events: [{ ...msg('x'), rseq: 1.5, at: at(T) }] }, T)).rejects.toThrow(/rseq must be an integer/);
    await expect(s.applyRunnerFrame({ jobId: job.id, attempt: 1, runnerId, events: ev, move: { from: ['queued'], to: 'succeeded' } }, T)).rejects.toThrow(/no status in from \[queued\] may move to succeeded/);
  });

  it('applyRunnerFrame: a finishing parent gets withChildren(result, its children by id, their usage); a job without children does not call it', async () => {
    const s = await h.open();
    const { job: parent, runnerId } = await claimed(s);
    const kid1 = await newJob(s, { parentId: parent.id, input: { name: 'one' } });
    const kid2 = await newJob(s, { parentId: parent.id });
    await newJob(s, { parentId: kid1.id }); // a grandchild: not a direct child
    await s.recordModelCall({ jobId: kid2.id, attempt: 1, provider: 'scripted', model: 'm', api: 'anthropic-messages', streamed: false, httpStatus: 200, inputTokens: 1, outputTokens: 1, cacheReadTokens: 0, cacheWriteTokens: 0, usageKnown: true, costMicros: 1234, startedAt: T, durationMs: 1 });
    const seen: string[] = [];
    const withChildren: FrameMove['withChildren'] = (result, kids, usage) => {
      seen.push(kids.map((k) => `${k.id}:${usage.get(k.id)?.costMicros ?? 'none'}`).join(','));
      return { ...(result ?? {}), summary: `${result?.summary} + ${kids.length} children` };
    };
    const out = await s.applyRunnerFrame({ jobId: parent.id, attempt: 1, runnerId, events: [finished(1, { summary: 'top' })], move: succeed({ summary: 'top' }, { withChildren }) }, T + 9);
    expect(seen).toEqual([`${kid1.id}:0,${kid2.id}:1234`]);
    expect(out).toMatchObject({ accepted: true, upTo: 1, moved: { status: 'succeeded', result: { summary: 'top + 2 children' } } });
    expect((await s.getJob(parent.id))?.result).toEqual({ summary: 'top + 2 children' });
    expect((await s.listEvents(parent.id, 0, 10)).map((e) => e.type)).toEqual(['job.finished']);

    const { job: lone, runnerId: r2 } = await claimed(s);
    const never: FrameMove['withChildren'] = () => {
      throw new Error('called for a job without children');
    };
    const plain = await s.applyRunnerFrame({ jobId: lone.id, attempt: 1, runnerId: r2, events: [finished(1, { summary: 'alone' })], move: succeed({ summary: 'alone' }, { withChildren: never }) }, T + 9);
    expect(plain).toMatchObject({ accepted: true, moved: { status: 'succeeded', result: { summary: 'alone' } } });
  });

  it('applyRunnerFrame: frames of several jobs handed over at once (one statement on PostgreSQL) each get the outcome they get alone', async () => {
    const s = await h.open();
    const a = await claimed(s);
    const b = await claimed(s);
    const stale = await claimed(s);
    const elsewhere = await claimed(s);
    const plain = await claimed(s);
    const resent = await claimed(s);
    await s.appendServerEvent(a.job.id, { type: 'status', data: { status: 'assigned' } }, T); // seq 1
    expect(await s.applyRunnerFrame({ jobId: resent.job.id, attempt: 1, runnerId: resent.runnerId, events: [started(1)] }, T)).toMatchObject({ accepted: true, upTo: 1 });
    const end = (x: { job: JobRow; runnerId: number }, events: FrameEvent[], attempt = 1, runnerId = x.runnerId) =>
      s.applyRunnerFrame({ jobId: x.job.id, attempt, runnerId, events, move: succeed({ summary: `s${x.job.id}` }, { startedAtIfUnset: T + 40 }) }, T + 50);
    const [oa, ob, oStale, oElsewhere, oPlain, oResent] = await Promise.all([
      end(a, [started(1), finished(2, { summary: `s${a.job.id}` })]),
      end(b, [finished(2, { summary: `s${b.job.id}` }), started(1)]),
      end(stale, [started(1)], 2),
      end(elsewhere, [started(1)], 1, a.runnerId),
      s.applyRunnerFrame({ jobId: plain.job.id, attempt: 1, runnerId: plain.runnerId, events: [{ ...msg('hi'), rseq: 1, at: at(T + 1) }] }, T + 50),
      end(resent, [started(1), finished(2, { summary: `s${resent.job.id}` })]),
    ]);
    // a: after the server's seq 1; b: from seq 1, in rseq order.
    if (!oa.accepted || !ob.accepted || !oPlain.accepted || !oResent.accepted) throw new Error('refused');
    expect([oa.upTo, oa.stored.map((e) => [e.seq, e.type])]).toEqual([2, [[2, 'harness.started'], [3, 'job.finished']]]);
    expect(oa.moved).toMatchObject({ id: a.job.id, status: 'succeeded', startedAt: T + 40, finishedAt: T + 50, result: { summary: `s${a.job.id}` }, attempt: 1 });
    expect([ob.upTo, ob.stored.map((e) => [e.seq, e.type])]).toEqual([2, [[1, 'harness.started'], [2, 'job.finished']]]);
    expect(ob.moved).toMatchObject({ id: b.job.id, status: 'succeeded', result: { summary: `s${b.job.id}` } });
    expect(oStale).toEqual({ accepted: false, job: { runnerId: stale.runnerId, status: 'assigned', attempt: 1 } });
    expect(oElsewhere).toEqual({ accepted: false, job: { runnerId: elsewhere.runnerId, status: 'assigned', attempt: 1 } });
    expect(oPlain).toEqual({ accepted: true, stored: [{ seq: 1, jobId: plain.job.id, at: at(T + 1), ...msg('hi') }], upTo: 1, moved: null });
    // rseq 1 was stored before: only the finish is new (seq 2); the move still applies.
    expect([oResent.upTo, oResent.stored.map((e) => [e.seq, e.type])]).toEqual([2, [[2, 'job.finished']]]);
    expect(oResent.moved).toMatchObject({ status: 'succeeded', startedAt: T + 40 });
    for (const x of [a, b, resent]) expect(await s.getJob(x.job.id)).toMatchObject({ status: 'succeeded', finishedAt: T + 50 });
    for (const x of [stale, elsewhere, plain]) expect(await s.getJob(x.job.id)).toMatchObject({ status: 'assigned' });
    expect((await s.listEvents(stale.job.id, 0, 10)).length + (await s.listEvents(elsewhere.job.id, 0, 10)).length).toBe(0);
    expect((await s.listEvents(a.job.id, 0, 10)).map((e) => e.seq)).toEqual([1, 2, 3]);
  });

  it('applyRunnerFrame: racing server events and frames on one job (two instances) give seq 1..n, each rseq once', async () => {
    const s = await h.open();
    const s2 = await h.another(s);
    const { job, runnerId } = await claimed(s);
    const writes: Promise<unknown>[] = [];
    for (let k = 0; k < 12; k++) {
      // Each frame resends everything before its two new events (a frame may not leave an rseq
      // missing, so frames racing in any order must each start at rseq 1).
      const frame = { jobId: job.id, attempt: 1, runnerId, events: Array.from({ length: k * 2 + 2 }, (_, i) => ({ ...msg(`r${i + 1}`), rseq: i + 1, at: at(T + Math.floor(i / 2)) })) };
      writes.push((k % 2 === 0 ? s : s2).applyRunnerFrame(frame, T + k));
      writes.push((k % 2 === 0 ? s2 : s).appendServerEvent(job.id, msg(`s${k}`), T + k));
      if (k % 4 === 0) writes.push(s2.applyRunnerFrame(frame, T + k)); // a resend racing the first send
    }
    await Promise.all(writes);
    const all = await s.listEvents(job.id, 0, 1000);
    expect(all.map((e) => e.seq)).toEqual(Array.from({ length: 36 }, (_, i) => i + 1));
    const texts = all.map((e) => (e.type === 'message' ? e.data.text : '?')).sort();
    expect(texts).toEqual([...Array.from({ length: 24 }, (_, i) => `r${i + 1}`), ...Array.from({ length: 12 }, (_, k) => `s${k}`)].sort());
  });

  it('the per-event size cap: a 3 MB event is stored cut to 256 KiB with a marker (frames, appends, server events), and so is the error the move writes', async () => {
    const s = await h.open();
    const { job, runnerId } = await claimed(s);
    const big = 'x'.repeat(3 * 1024 * 1024);
    const cap = 256 * 1024;
    const size = (v: unknown) => Buffer.byteLength(JSON.stringify(v));
    const out = await s.applyRunnerFrame(
      {
        jobId: job.id,
        attempt: 1,
        runnerId,
        events: [{ ...msg(big), rseq: 1, at: at(T + 1) }, { type: 'job.finished', data: { status: 'failed', error: big }, rseq: 2, at: at(T + 2) }],
        move: { from: ['assigned', 'running'], to: 'failed', endReason: 'error', error: big },
      },
      T + 3,
    );
    expect(out).toMatchObject({ accepted: true, upTo: 2 });
    const stored = await s.listEvents(job.id, 0, 10);
    for (const e of [...stored, ...(out.accepted ? out.stored : [])]) expect(size(e.data)).toBeLessThanOrEqual(cap);
    expect(stored.map((e) => e.type)).toEqual(['message', 'job.finished']);
    expect((stored[0] as Extract<typeof stored[number], { type: 'message' }>).data.text).toMatch(/^x+… \[truncated 2\.[78] MiB\]$/);
    const row = await s.getJob(job.id);
    expect(row).toMatchObject({ status: 'failed' });
    expect(row!.error).toMatch(/^x+… \[truncated 2\.[78] MiB\]$/);
    const server = await s.appendServerEvent(job.id, { type: 'status', data: { status: 'failed', message: big } }, T + 4);
    expect(size(server.data)).toBeLessThanOrEqual(cap);
    const other = await claimed(s);
    const appended = await s.appendRunnerEvents(other.job.id, 1, [{ ...msg(big), rseq: 1, at: at(T) }]);
    expect(appended.accepted && size(appended.stored[0]!.data)).toBeLessThanOrEqual(cap);
    expect(size((await s.listEvents(other.job.id, 0, 10))[0]!.data)).toBeLessThanOrEqual(cap);
  });
}
