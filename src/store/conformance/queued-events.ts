import { expect, it } from 'vitest';
import type { EventBody } from '../../protocol/index.js';
import { T, fakeHash, newJob, newRunner, type Harness } from './harness.js';

const note = (message: string): EventBody => ({ type: 'status', data: { status: 'queued', message } });
const assigned = (runnerId: number): EventBody => ({ type: 'status', data: { status: 'assigned', message: 'assigned', runnerId } });

/** store.appendEventsIfQueued (store/queued-events.ts): the dispatcher's "why it waits" notes, many jobs per call. */
export function queuedEventTests(h: Harness): void {
  it('appendEventsIfQueued: stores an event only on jobs still queued, each at its next seq, in the given order', async () => {
    const s = await h.open();
    const r = await newRunner(s);
    const A = await newJob(s);
    const B = await newJob(s);
    const C = await newJob(s);
    const D = await newJob(s);
    const E = await newJob(s);
    await s.appendServerEvent(A.id, note('waiting for a runner'), T); // A: seq 1 taken
    await s.claimJobById(C.id, { id: r.id, labels: {} }, fakeHash('c'), T); // C: assigned since
    await s.transitionJob(D.id, null, ['queued'], 'cancelled', T, { endReason: 'cancelled' }); // D: cancelled
    // E: assigned, then back in the queue (attempt 1): noted again, at its next seq.
    await s.appendServerEvent(E.id, note('first'), T);
    await s.claimJobById(E.id, { id: r.id, labels: {} }, fakeHash('e'), T);
    await s.appendServerEvent(E.id, assigned(r.id), T);
    expect(await s.requeueJob(E.id, 1, T)).toBe(true);
    const missing = E.id + 1000;

    const got = await s.appendEventsIfQueued(
      [
        { jobId: B.id, event: note('no runner registered yet, waiting') },
        { jobId: C.id, event: note('c') },
        { jobId: missing, event: note('x') },
        { jobId: E.id, event: note('e') },
        { jobId: A.id, event: note('no runner matches os=mac, waiting') },
        { jobId: D.id, event: note('d') },
      ],
      T + 5,
    );
    const at = '2027-01-15T08:00:00.005Z';
    expect(got).toEqual([
      { jobId: B.id, seq: 1, type: 'status', data: { status: 'queued', message: 'no runner registered yet, waiting' }, at },
      { jobId: E.id, seq: 3, type: 'status', data: { status: 'queued', message: 'e' }, at },
      { jobId: A.id, seq: 2, type: 'status', data: { status: 'queued', message: 'no runner matches os=mac, waiting' }, at },
    ]);
    expect(await s.listEvents(A.id, 0, 10)).toEqual([{ jobId: A.id, seq: 1, type: 'status', data: { status: 'queued', message: 'waiting for a runner' }, at: '2027-01-15T08:00:00.000Z' }, got[2]]);
    expect(await s.listEvents(B.id, 0, 10)).toEqual([got[0]]);
    expect(await s.listEvents(C.id, 0, 10)).toEqual([]);
    expect(await s.listEvents(D.id, 0, 10)).toEqual([]);
    expect((await s.listEvents(E.id, 0, 10)).map((e) => e.seq)).toEqual([1, 2, 3]);
    // The jobs themselves are untouched.
    expect(await s.getJob(C.id)).toMatchObject({ status: 'assigned', attempt: 1, runnerId: r.id });
    expect(await s.getJob(A.id)).toEqual(A);
    // The next append of any kind follows on.
    expect((await s.appendServerEvent(B.id, note('y'), T + 6)).seq).toBe(2);
  });

  it('appendEventsIfQueued: an event is cut to the per-event cap; empty batch; a job twice is refused with nothing stored', async () => {
    const s = await h.open();
    const A = await newJob(s);
    const B = await newJob(s);
    const long = 'x'.repeat(300 * 1024); // over the 256 KiB cap
    const [got] = await s.appendEventsIfQueued([{ jobId: A.id, event: note(long) }], T);
    const message = (got!.data as { message: string }).message;
    expect(message.startsWith('xxxx')).toBe(true);
    expect(message).toMatch(/… \[truncated \d+\.\d KiB\]$/);
    expect(Buffer.byteLength(JSON.stringify(got!.data))).toBeLessThanOrEqual(256 * 1024);
    expect(await s.listEvents(A.id, 0, 10)).toEqual([got]);
    expect(await s.appendEventsIfQueued([], T)).toEqual([]);
    await expect(
      s.appendEventsIfQueued(
        [
          { jobId: B.id, event: note('a') },
          { jobId: B.id, event: note('b') },
        ],
        T,
      ),
    ).rejects.toThrow(/appears twice/);
    await expect(s.appendEventsIfQueued([{ jobId: 0, event: note('a') }], T)).rejects.toThrow(/jobId must be an integer >= 1/);
    expect(await s.listEvents(B.id, 0, 10)).toEqual([]);
  });

  it('appendEventsIfQueued under concurrency: 3 instances note 12 jobs while others append and claim; seqs 1..n, no note after an assignment', async () => {
    const s = await h.open();
    const r = await newRunner(s);
    const ids: number[] = [];
    for (let i = 0; i < 12; i++) ids.push((await newJob(s)).id);
    const stores = [s, await h.another(s), await h.another(s)];
    const noted = new Map<number, number>(ids.map((id) => [id, 0]));
    const claimed = ids.filter((_, i) => i % 3 === 0);
    const notes = stores.map(async (st, k) => {
      for (let round = 0; round < 6; round++) {
        // A different order per instance and round, so the batches overlap in every way.
        const order = [...ids.slice((k * 5 + round) % 12), ...ids.slice(0, (k * 5 + round) % 12)];
        for (const e of await st.appendEventsIfQueued(order.map((jobId) => ({ jobId, event: note(`${k}.${round}`) })), T + round)) noted.set(e.jobId, noted.get(e.jobId)! + 1);
      }
    });
    const appends = (async () => {
      for (let round = 0; round < 3; round++) for (const id of ids) await stores[1]!.appendServerEvent(id, { type: 'message', data: { role: 'assistant', text: `m${round}` } }, T);
    })();
    const claims = (async () => {
      await new Promise((resolve) => setTimeout(resolve, 5));
      for (const id of claimed) {
        // A row a note holds at that instant is skipped (SKIP LOCKED): claim it again, a moment
        // later. Bounded by time, not tries: 100 tries back to back all met a held row once on a
        // loaded machine (the full suite), and the job then read as never assigned.
        const until = Date.now() + 10_000;
        let got: unknown[] = [];
        while (got.length === 0 && Date.now() < until) {
          got = await stores[2]!.claimJobsById([{ jobId: id, runner: { id: r.id, labels: {} }, tokenHash: fakeHash('t'), holds: 'workspace', event: assigned(r.id) }], T + 9);
          if (got.length === 0) await new Promise((resolve) => setTimeout(resolve, 1));
        }
        expect(got.length, `job ${id} was never claimed in 10 s`).toBe(1);
      }
    })();
    await Promise.all([...notes, appends, claims]);
    for (const id of ids) {
      const evs = await s.listEvents(id, 0, 1000);
      // Numbered 1..n with no gap or duplicate: 3 messages, the notes stored, and the claimed job's assigned event.
      expect(evs.map((e) => e.seq)).toEqual(evs.map((_, i) => i + 1));
      const notesStored = evs.filter((e) => e.type === 'status' && (e.data as { status: string }).status === 'queued');
      expect(notesStored.length).toBe(noted.get(id));
      expect(evs.filter((e) => e.type === 'message').length).toBe(3);
      const assignedAt = evs.findIndex((e) => e.type === 'status' && (e.data as { status: string }).status === 'assigned');
      if (claimed.includes(id)) {
        expect(assignedAt).toBeGreaterThanOrEqual(0);
        // Nothing says `queued` after the assignment.
        expect(notesStored.every((e) => e.seq < evs[assignedAt]!.seq)).toBe(true);
      } else expect(assignedAt).toBe(-1);
    }
  });
}
