import { expect, it } from 'vitest';
import { T, fakeHash, newJob, newRunner, type Harness } from './harness.js';

export function transitionTests(h: Harness): void {
  it('transitionJob: fenced by attempt and from-status; nothing changes when refused', async () => {
    const s = await h.open();
    const r = await newRunner(s);
    const j = await newJob(s);
    const tok = fakeHash('t');
    const claimed = await s.claimJob({ id: r.id, labels: {} }, tok, T + 1);
    expect(claimed?.attempt).toBe(1);

    // wrong attempt
    expect(await s.transitionJob(j.id, 2, ['assigned'], 'running', T + 2, { startedAt: T + 2 })).toBeNull();
    expect(await s.getJob(j.id)).toEqual(claimed);
    // wrong from-status (it is assigned, not running)
    expect(await s.transitionJob(j.id, 1, ['running'], 'succeeded', T + 2, { endReason: 'x' })).toBeNull();
    expect(await s.getJob(j.id)).toEqual(claimed);
    // unknown job
    expect(await s.transitionJob(j.id + 50, null, ['assigned'], 'running', T + 2)).toBeNull();

    const running = await s.transitionJob(j.id, 1, ['assigned'], 'running', T + 3, { startedAt: T + 3, sessionId: 'sess-1' });
    expect(running).toEqual({ ...claimed, status: 'running', startedAt: T + 3, sessionId: 'sess-1' });
    expect((await s.findJobByTokenHash(tok))?.id).toBe(j.id);

    const result = { summary: 'Fixed sum()', changedFiles: ['src/calc.js'], branch: 'flotilla/job-1', extra: { n: 1 } };
    const done = await s.transitionJob(j.id, null, ['assigned', 'running'], 'succeeded', T + 9, { endReason: 'done', result });
    expect(done).toEqual({ ...running, status: 'succeeded', endReason: 'done', result, finishedAt: T + 9 });
    expect(await s.getJob(j.id)).toEqual(done);
    // token dies with the terminal state
    expect(await s.findJobByTokenHash(tok)).toBeNull();
    // terminal never changes
    expect(await s.transitionJob(j.id, null, ['running'], 'failed', T + 10, { error: 'late' })).toBeNull();
    expect(await s.getJob(j.id)).toEqual(done);
    await expect(s.transitionJob(j.id, null, ['succeeded'], 'failed', T + 10)).rejects.toThrow(/may move/);
    await expect(s.transitionJob(j.id, null, ['queued'], 'running', T + 10)).rejects.toThrow(/may move/);
  });

  it('transitionJob: cancel from queued, fail with error, pause and re-queue', async () => {
    const s = await h.open();
    const r = await newRunner(s);
    const q = await newJob(s);
    const c = await s.transitionJob(q.id, null, ['queued', 'assigned', 'running', 'paused'], 'cancelled', T + 5, { endReason: 'cancelled' });
    expect(c).toEqual({ ...q, status: 'cancelled', endReason: 'cancelled', finishedAt: T + 5 });

    const f = await newJob(s);
    const tok = fakeHash('t');
    await s.claimJob({ id: r.id, labels: {} }, tok, T + 1);
    const failed = await s.transitionJob(f.id, 1, ['assigned', 'running'], 'failed', T + 6, { endReason: 'error', error: 'workspace: clone failed' });
    expect(failed).toMatchObject({ status: 'failed', endReason: 'error', error: 'workspace: clone failed', finishedAt: T + 6, runnerId: r.id });
    expect(await s.findJobByTokenHash(tok)).toBeNull();

    const p = await newJob(s);
    await s.claimJob({ id: r.id, labels: {} }, fakeHash('t'), T + 1);
    await s.transitionJob(p.id, 1, ['assigned'], 'running', T + 2, { startedAt: T + 2 });
    const paused = await s.transitionJob(p.id, 1, ['running'], 'paused', T + 3, { endReason: 'budget' });
    expect(paused).toMatchObject({ status: 'paused', endReason: 'budget', finishedAt: null });
    const requeued = await s.transitionJob(p.id, null, ['paused'], 'queued', T + 4);
    expect(requeued).toMatchObject({ status: 'queued', runnerId: null, assignedAt: null, attempt: 1 });
    expect((await s.claimJob({ id: r.id, labels: {} }, fakeHash('t'), T + 5))).toMatchObject({ id: p.id, attempt: 2 });
  });
}
