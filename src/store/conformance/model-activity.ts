import { expect, it } from 'vitest';
import { T, newJob, type Harness } from './harness.js';

/** Model-call activity per job attempt (store/model-activity.ts, migration 0010). */
export function modelActivityTests(h: Harness): void {
  it('model activity: starts and ends of calls add up per attempt, across instances; the last time only moves forward', async () => {
    const s = await h.open();
    const other = await h.another(s);
    const a = await newJob(s);
    const b = await newJob(s);
    expect(await s.modelCallActivity([{ jobId: a.id, attempt: 1 }])).toEqual([]);
    // Two calls of job a start on two "replicas", one ends.
    await s.noteModelCall(a.id, 1, 'start', T + 100);
    await other.noteModelCall(a.id, 1, 'start', T + 200);
    await s.noteModelCall(a.id, 1, 'end', T + 300);
    // A late write with an older time does not move last_at back.
    await other.noteModelCall(b.id, 2, 'start', T + 500);
    await other.noteModelCall(b.id, 2, 'end', T + 400);
    // An end without a start (e.g. after a crash) never goes below 0.
    await s.noteModelCall(b.id, 2, 'end', T + 600);
    const got = await other.modelCallActivity([{ jobId: a.id, attempt: 1 }, { jobId: b.id, attempt: 2 }, { jobId: b.id, attempt: 1 }]);
    expect(got.sort((x, y) => x.jobId - y.jobId)).toEqual([
      { jobId: a.id, attempt: 1, inFlight: 1, lastAt: T + 300 },
      { jobId: b.id, attempt: 2, inFlight: 0, lastAt: T + 600 },
    ]);
    // Another attempt of job a is counted apart.
    await s.noteModelCall(a.id, 2, 'start', T + 700);
    expect(await s.modelCallActivity([{ jobId: a.id, attempt: 2 }])).toEqual([{ jobId: a.id, attempt: 2, inFlight: 1, lastAt: T + 700 }]);
  });

  it('model activity: concurrent starts from two instances are all counted', async () => {
    const s = await h.open();
    const other = await h.another(s);
    const a = await newJob(s);
    await Promise.all(Array.from({ length: 20 }, (_, i) => (i % 2 ? s : other).noteModelCall(a.id, 1, 'start', T + i)));
    await Promise.all(Array.from({ length: 15 }, (_, i) => (i % 2 ? other : s).noteModelCall(a.id, 1, 'end', T + 100 + i)));
    expect(await s.modelCallActivity([{ jobId: a.id, attempt: 1 }])).toEqual([{ jobId: a.id, attempt: 1, inFlight: 5, lastAt: T + 114 }]);
  });

  it('model activity: starts and ends made in the same turn add up as if made one by one', async () => {
    const s = await h.open();
    const a = await newJob(s);
    await Promise.all([1, 2, 3].map((i) => s.noteModelCall(a.id, 1, 'start', T + i)));
    // 3 in flight; now, in one turn: 3 of them end, 4 new ones start (one with an older time).
    const phases = ['end', 'end', 'start', 'start', 'start', 'start', 'end'] as const;
    await Promise.all(phases.map((p, i) => s.noteModelCall(a.id, 1, p, i === 4 ? T : T + 10 + i)));
    expect(await s.modelCallActivity([{ jobId: a.id, attempt: 1 }])).toEqual([{ jobId: a.id, attempt: 1, inFlight: 4, lastAt: T + 16 }]);
    // An end with no start before it (never below 0), then a start, in one turn: 1 in flight.
    // (SQLite applies a turn's writes in the order they were made; PostgreSQL's pool does not.)
    if (s.dialect !== 'sqlite') return;
    await Promise.all([s.noteModelCall(a.id, 2, 'end', T + 1), s.noteModelCall(a.id, 2, 'start', T + 2)]);
    expect(await s.modelCallActivity([{ jobId: a.id, attempt: 2 }])).toEqual([{ jobId: a.id, attempt: 2, inFlight: 1, lastAt: T + 2 }]);
  });

  it('model activity: bad input names the field and stores nothing', async () => {
    const s = await h.open();
    const a = await newJob(s);
    await expect(s.noteModelCall(0, 1, 'start', T)).rejects.toThrow(/jobId/);
    await expect(s.noteModelCall(a.id, 1.5, 'start', T)).rejects.toThrow(/attempt/);
    await expect(s.noteModelCall(a.id, 1, 'begin' as 'start', T)).rejects.toThrow(/phase must be "start" or "end"/);
    await expect(s.modelCallActivity([{ jobId: -1, attempt: 1 }])).rejects.toThrow(/jobId/);
    expect(await s.modelCallActivity([{ jobId: a.id, attempt: 1 }])).toEqual([]);
  });
}
