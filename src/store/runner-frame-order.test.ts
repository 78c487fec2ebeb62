// store.applyRunnerFrame keeps a runner's events whole and ends them at job.finished, on both
// engines and every path (SQLite prepared; PostgreSQL one statement, the batch of one turn, and
// the transaction behind them): a frame that would leave an rseq missing is refused with nothing
// written (the ack is "everything up to here"), and events after the attempt's job.finished are
// not stored.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { EventBody, JobResult } from '../protocol/index.js';
import type { FrameEvent, FrameMove } from './dispatch-types.js';
import { T, fakeHash, newJob, newRunner } from './conformance/harness.js';
import { openStore } from './open.js';
import { openPostgresStore } from './postgres.js';
import { createTestDatabase } from './test-pg.js';
import type { JobRow, Store } from './types.js';

const at = (ms: number) => new Date(ms).toISOString();
const msg = (rseq: number, text = `m${rseq}`): FrameEvent => ({ ...({ type: 'message', data: { role: 'assistant', text } } as EventBody), rseq, at: at(T + rseq) });
const finished = (rseq: number, result: JobResult = { summary: 'done' }): FrameEvent => ({ type: 'job.finished', data: { status: 'succeeded', result }, rseq, at: at(T + rseq) });
const succeed: FrameMove = { from: ['assigned', 'running', 'cancelling'], to: 'succeeded', endReason: null, error: null, result: { summary: 'done' } };

const pg = await createTestDatabase();
const dirs: string[] = [];
const stores: Store[] = [];
afterAll(async () => {
  for (const s of stores.splice(0)) await s.close();
  await pg?.drop();
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

let schemas = 0;
const engines: Array<[string, () => Promise<Store>]> = [
  [
    'sqlite',
    async () => {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'flotilla-frame-order-'));
      dirs.push(dir);
      return openStore({ dataDir: path.join(dir, 'data') });
    },
  ],
  ...(pg ? [['postgres', () => openPostgresStore(pg.url, { schema: `fo${++schemas}`, maxConnections: 4 })] as [string, () => Promise<Store>]] : []),
];

describe.each(engines)('applyRunnerFrame: no rseq missing, nothing after job.finished (%s)', (_name, open) => {
  const fresh = async () => {
    const s = await open();
    stores.push(s);
    return s;
  };
  /** A queued job claimed by a new runner: attempt 1. */
  const claimed = async (s: Store): Promise<{ job: JobRow; runnerId: number }> => {
    const r = await newRunner(s);
    const j = await newJob(s);
    return { job: (await s.claimJobById(j.id, { id: r.id, labels: {} }, fakeHash('t'), T))!, runnerId: r.id };
  };
  const rseqs = async (s: Store, jobId: number) => (await s.listEvents(jobId, 0, 100)).map((e) => (e.type === 'message' ? e.data.text : e.type));

  it('a frame starting past the next rseq is refused whole (gap), its move not applied; the resend from the ack is stored in order', async () => {
    const s = await fresh();
    const { job, runnerId } = await claimed(s);
    const f = { jobId: job.id, attempt: 1, runnerId };
    expect(await s.applyRunnerFrame({ ...f, events: [msg(1), msg(2)] }, T + 1)).toMatchObject({ accepted: true, upTo: 2 });
    // 3 and 4 never arrived; 5 (and the job's end with it) must not be stored or acked.
    expect(await s.applyRunnerFrame({ ...f, events: [msg(5), finished(6)], move: succeed }, T + 2)).toEqual({
      accepted: false,
      job: { runnerId, status: 'assigned', attempt: 1 },
      gap: { upTo: 2, first: 5 },
    });
    expect(await rseqs(s, job.id)).toEqual(['m1', 'm2']);
    expect((await s.getJob(job.id))?.status).toBe('assigned');
    // The runner reconnects and resends everything after its ack (2).
    const out = await s.applyRunnerFrame({ ...f, events: [msg(3), msg(4), msg(5), finished(6)], move: succeed }, T + 3);
    expect(out).toMatchObject({ accepted: true, upTo: 6, moved: { status: 'succeeded' } });
    expect(await rseqs(s, job.id)).toEqual(['m1', 'm2', 'm3', 'm4', 'm5', 'job.finished']);
    expect((await s.listEvents(job.id, 0, 100)).map((e) => e.seq)).toEqual([1, 2, 3, 4, 5, 6]);
  });

  it('events after the attempt’s job.finished are not stored: in the same frame, in a later one, or in a resend', async () => {
    const s = await fresh();
    const { job, runnerId } = await claimed(s);
    const f = { jobId: job.id, attempt: 1, runnerId };
    const same = await s.applyRunnerFrame({ ...f, events: [msg(1), finished(2), msg(3, 'late')], move: succeed }, T + 1);
    expect(same).toMatchObject({ accepted: true, upTo: 2, moved: { status: 'succeeded' }, afterFinish: { finishedRseq: 2, refused: 1 } });
    if (!same.accepted) throw new Error('refused');
    expect(same.stored.map((e) => e.type)).toEqual(['message', 'job.finished']);
    // A later frame (the job has ended): nothing stored, the ack stays at the job.finished.
    expect(await s.applyRunnerFrame({ ...f, events: [msg(3, 'late'), msg(4, 'later')] }, T + 2)).toEqual({
      accepted: true,
      stored: [],
      upTo: 2,
      moved: null,
      afterFinish: { finishedRseq: 2, refused: 2 },
    });
    // A resend of everything: the repeats are skipped, the rest refused.
    expect(await s.applyRunnerFrame({ ...f, events: [msg(1), finished(2), msg(3, 'late')], move: succeed }, T + 3)).toEqual({
      accepted: true,
      stored: [],
      upTo: 2,
      moved: null,
      afterFinish: { finishedRseq: 2, refused: 1 },
    });
    // A plain resend after the end (a lost ack) is no refusal.
    expect(await s.applyRunnerFrame({ ...f, events: [msg(1), finished(2)], move: succeed }, T + 4)).toEqual({ accepted: true, stored: [], upTo: 2, moved: null });
    expect(await rseqs(s, job.id)).toEqual(['m1', 'job.finished']);
    expect(await s.getJob(job.id)).toMatchObject({ status: 'succeeded', result: { summary: 'done' }, finishedAt: T + 1 });
  });

  it('a job ended by the server without a job.finished still takes its runner’s late events', async () => {
    const s = await fresh();
    const { job, runnerId } = await claimed(s);
    expect(await s.transitionJob(job.id, 1, ['assigned'], 'cancelled', T + 1, { endReason: 'cancelled' })).toBeTruthy();
    expect(await s.applyRunnerFrame({ jobId: job.id, attempt: 1, runnerId, events: [msg(1)] }, T + 2)).toMatchObject({ accepted: true, upTo: 1 });
    expect(await rseqs(s, job.id)).toEqual(['m1']);
  });

  it('frames of several jobs handed over at once (one statement on PostgreSQL) each get the outcome they get alone', async () => {
    const s = await fresh();
    const [gap, ended, same, plain] = [await claimed(s), await claimed(s), await claimed(s), await claimed(s)];
    const f = (x: { job: JobRow; runnerId: number }) => ({ jobId: x.job.id, attempt: 1, runnerId: x.runnerId });
    await s.applyRunnerFrame({ ...f(gap), events: [msg(1)] }, T);
    await s.applyRunnerFrame({ ...f(ended), events: [finished(1)], move: succeed }, T);
    await s.applyRunnerFrame({ ...f(plain), events: [msg(1)] }, T);
    const [oGap, oEnded, oSame, oPlain] = await Promise.all([
      s.applyRunnerFrame({ ...f(gap), events: [msg(3)] }, T + 5),
      s.applyRunnerFrame({ ...f(ended), events: [msg(2)] }, T + 5),
      s.applyRunnerFrame({ ...f(same), events: [finished(1), msg(2)], move: succeed }, T + 5),
      s.applyRunnerFrame({ ...f(plain), events: [msg(2)] }, T + 5),
    ]);
    expect(oGap).toEqual({ accepted: false, job: { runnerId: gap.runnerId, status: 'assigned', attempt: 1 }, gap: { upTo: 1, first: 3 } });
    expect(oEnded).toEqual({ accepted: true, stored: [], upTo: 1, moved: null, afterFinish: { finishedRseq: 1, refused: 1 } });
    expect(oSame).toMatchObject({ accepted: true, upTo: 1, moved: { status: 'succeeded' }, afterFinish: { finishedRseq: 1, refused: 1 } });
    expect(oPlain).toMatchObject({ accepted: true, upTo: 2 });
    expect(await rseqs(s, gap.job.id)).toEqual(['m1']);
    expect(await rseqs(s, ended.job.id)).toEqual(['job.finished']);
    expect(await rseqs(s, same.job.id)).toEqual(['job.finished']);
    expect(await rseqs(s, plain.job.id)).toEqual(['m1', 'm2']);
  });
});
