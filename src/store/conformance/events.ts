import { expect, it } from 'vitest';
import type { EventBody } from '../../protocol/index.js';
import { T, fakeHash, newJob, newRunner, type Harness } from './harness.js';

const at = (ms: number) => new Date(ms).toISOString();
const msg = (text: string): EventBody => ({ type: 'message', data: { role: 'assistant', text } });

export function eventTests(h: Harness): void {
  it('events: seq numbering, resend dedupe, stale attempt refused, listing', async () => {
    const s = await h.open();
    const r = await newRunner(s);
    const j = await newJob(s);
    const first = await s.appendServerEvent(j.id, { type: 'status', data: { status: 'queued' } }, T);
    expect(first).toEqual({ seq: 1, jobId: j.id, at: '2027-01-15T08:00:00.000Z', type: 'status', data: { status: 'queued' } });
    await s.claimJob({ id: r.id, labels: {} }, fakeHash('t'), T + 1);

    const call: EventBody = { type: 'tool.call', data: { id: 'tu_1', name: 'Bash', input: { command: 'npm test' } } };
    const res: EventBody = { type: 'tool.result', data: { id: 'tu_1', output: '3 passed, 1 failed', isError: false } };
    const batch1 = [
      { ...msg('looking'), rseq: 1, at: at(T + 10) },
      { ...call, rseq: 2, at: at(T + 11) },
      { ...res, rseq: 3, at: at(T + 12) },
    ];
    const a1 = await s.appendRunnerEvents(j.id, 1, batch1);
    expect(a1).toEqual({
      accepted: true,
      upTo: 3,
      stored: [
        { seq: 2, jobId: j.id, at: at(T + 10), ...msg('looking') },
        { seq: 3, jobId: j.id, at: at(T + 11), ...call },
        { seq: 4, jobId: j.id, at: at(T + 12), ...res },
      ],
    });
    // Resend of 2 and 3 plus a new 4 (and 4 twice in the batch): only rseq 4 is stored, as seq 5.
    const a2 = await s.appendRunnerEvents(j.id, 1, [batch1[1]!, batch1[2]!, { ...msg('fixed'), rseq: 4, at: at(T + 13) }, { ...msg('dup'), rseq: 4, at: at(T + 13) }]);
    expect(a2).toEqual({ accepted: true, upTo: 4, stored: [{ seq: 5, jobId: j.id, at: at(T + 13), ...msg('fixed') }] });
    // Pure resend: nothing new, upTo still 4.
    expect(await s.appendRunnerEvents(j.id, 1, batch1)).toEqual({ accepted: true, upTo: 4, stored: [] });
    expect(await s.appendRunnerEvents(j.id, 1, [])).toEqual({ accepted: true, upTo: 4, stored: [] });
    // Stale attempt and unknown job are refused.
    expect(await s.appendRunnerEvents(j.id, 0, [{ ...msg('old'), rseq: 9, at: at(T) }])).toEqual({ accepted: false });
    expect(await s.appendRunnerEvents(j.id, 2, [{ ...msg('future'), rseq: 9, at: at(T) }])).toEqual({ accepted: false });
    expect(await s.appendRunnerEvents(j.id + 100, 1, [{ ...msg('x'), rseq: 1, at: at(T) }])).toEqual({ accepted: false });
    await expect(s.appendServerEvent(j.id + 100, msg('x'), T)).rejects.toThrow(/does not exist/);

    const all = await s.listEvents(j.id, 0, 100);
    expect(all.map((e) => e.seq)).toEqual([1, 2, 3, 4, 5]);
    expect(all.map((e) => e.type)).toEqual(['status', 'message', 'tool.call', 'tool.result', 'message']);
    expect(all[2]).toEqual({ seq: 3, jobId: j.id, at: at(T + 11), ...call });
    expect((await s.listEvents(j.id, 3, 1)).map((e) => e.seq)).toEqual([4]);
    expect(await s.listEvents(j.id, 5, 10)).toEqual([]);
  });

  it('events: a batch of 1,200 (past one 500-row chunk) resent with 300 new ones stores each rseq once, seq 1..1500', async () => {
    const s = await h.open();
    const r = await newRunner(s);
    const j = await newJob(s);
    await s.claimJob({ id: r.id, labels: {} }, fakeHash('t'), T);
    const ev = (rseq: number) => ({ ...msg(`m${rseq}`), rseq, at: at(T + rseq) });
    const a = await s.appendRunnerEvents(j.id, 1, Array.from({ length: 1200 }, (_, i) => ev(i + 1)));
    expect(a).toMatchObject({ accepted: true, upTo: 1200 });
    // Resend of 1..1200 (shuffled by halves) plus 1201..1500: only the new 300 are stored.
    const again = [...Array.from({ length: 600 }, (_, i) => ev(i + 601)), ...Array.from({ length: 900 }, (_, i) => ev(i + 1 <= 600 ? i + 1 : i + 601))];
    const b = await s.appendRunnerEvents(j.id, 1, again);
    expect(b.accepted && b.stored.map((e) => e.seq)).toEqual(Array.from({ length: 300 }, (_, i) => 1201 + i));
    expect(b).toMatchObject({ upTo: 1500 });
    const all = await s.listEvents(j.id, 0, 10_000);
    expect(all.map((e) => e.seq)).toEqual(Array.from({ length: 1500 }, (_, i) => i + 1));
    expect(all.map((e) => (e.data as { text: string }).text)).toEqual(Array.from({ length: 1500 }, (_, i) => `m${i + 1}`));
  });

  it('events: a new attempt may reuse rseq values; the old attempt is fenced off', async () => {
    const s = await h.open();
    const r = await newRunner(s);
    const j = await newJob(s);
    await s.claimJob({ id: r.id, labels: {} }, fakeHash('t'), T);
    expect(await s.appendRunnerEvents(j.id, 1, [{ ...msg('a1'), rseq: 1, at: at(T) }])).toMatchObject({ accepted: true, upTo: 1 });
    expect(await s.requeueJob(j.id, 1, T + 1)).toBe(true);
    await s.claimJob({ id: r.id, labels: {} }, fakeHash('t'), T + 2);
    const a = await s.appendRunnerEvents(j.id, 2, [{ ...msg('a2'), rseq: 1, at: at(T + 3) }]);
    expect(a).toEqual({ accepted: true, upTo: 1, stored: [{ seq: 2, jobId: j.id, at: at(T + 3), ...msg('a2') }] });
    expect(await s.appendRunnerEvents(j.id, 1, [{ ...msg('late'), rseq: 2, at: at(T + 4) }])).toEqual({ accepted: false });
    expect((await s.listEvents(j.id, 0, 10)).map((e) => (e.type === 'message' ? e.data.text : e.type))).toEqual(['a1', 'a2']);
  });

  it('events: concurrent appends to one job (two instances) give seq 1..n, no gap, no duplicate', async () => {
    const s = await h.open();
    const s2 = await h.another(s);
    const r = await newRunner(s);
    const j = await newJob(s);
    await s.claimJob({ id: r.id, labels: {} }, fakeHash('t'), T);
    const writes: Promise<unknown>[] = [];
    for (let k = 0; k < 10; k++) {
      const store = k % 2 === 0 ? s : s2;
      const batch = [1, 2, 3, 4, 5].map((i) => ({ ...msg(`r${k * 5 + i}`), rseq: k * 5 + i, at: at(T + k) }));
      writes.push(store.appendRunnerEvents(j.id, 1, batch));
      writes.push((k % 2 === 0 ? s2 : s).appendServerEvent(j.id, msg(`s${k}`), T + k));
    }
    // Resends of batches racing the first sends must not add anything.
    for (let k = 0; k < 10; k += 3) {
      writes.push(s2.appendRunnerEvents(j.id, 1, [1, 2, 3, 4, 5].map((i) => ({ ...msg(`r${k * 5 + i}`), rseq: k * 5 + i, at: at(T + k) }))));
    }
    await Promise.all(writes);
    const all = await s.listEvents(j.id, 0, 1000);
    expect(all.map((e) => e.seq)).toEqual(Array.from({ length: 60 }, (_, i) => i + 1));
    const texts = all.map((e) => (e.type === 'message' ? e.data.text : '?')).sort();
    const expected = [...Array.from({ length: 50 }, (_, i) => `r${i + 1}`), ...Array.from({ length: 10 }, (_, k) => `s${k}`)].sort();
    expect(texts).toEqual(expected);
    // Within one runner batch, rseq order is kept in seq order.
    const seqOf = new Map(all.map((e) => [e.type === 'message' ? e.data.text : '?', e.seq]));
    for (let k = 0; k < 10; k++) {
      const seqs = [1, 2, 3, 4, 5].map((i) => seqOf.get(`r${k * 5 + i}`)!);
      expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
    }
  });
}
