import { describe, expect, it } from 'vitest';
import { Outbox, MAX_BATCH_EVENTS, MAX_IN_FLIGHT_EVENTS } from './outbox.js';

const msg = (text: string) => ({ type: 'message' as const, data: { role: 'assistant' as const, text } });
const rseqs = (b: ReturnType<Outbox['nextBatch']>) => b?.events.map((e) => e.rseq) ?? null;

describe('Outbox', () => {
  it('numbers events 1..n, sends each once per connection, in order', () => {
    const o = new Outbox(4, 2);
    expect([o.push(msg('a')), o.push(msg('b'))]).toEqual([1, 2]);
    const b = o.nextBatch();
    expect(b).toMatchObject({ type: 'job.events', jobId: 4, attempt: 2 });
    expect(b?.events[0]).toMatchObject({ rseq: 1, type: 'message', data: { text: 'a' } });
    expect(rseqs(b)).toEqual([1, 2]);
    expect(o.nextBatch()).toBeNull();
    o.push(msg('c'));
    expect(rseqs(o.nextBatch())).toEqual([3]);
  });

  it('resends every unacked event after a rewind, before newer ones, and forgets acked ones', () => {
    const o = new Outbox(1, 1);
    for (const t of ['a', 'b', 'c', 'd']) o.push(msg(t));
    o.nextBatch();
    o.ack(2);
    expect(o.unacked).toBe(2);
    o.push(msg('e'));
    o.rewind();
    expect(rseqs(o.nextBatch())).toEqual([3, 4, 5]);
    o.ack(1); // stale ack: no effect
    expect(o.ackedUpTo).toBe(2);
    o.ack(99); // beyond what exists: clamped
    expect(o.ackedUpTo).toBe(5);
    expect(o.unacked).toBe(0);
    o.rewind();
    expect(o.nextBatch()).toBeNull();
  });

  it('splits large backlogs into batches of at most MAX_BATCH_EVENTS', () => {
    const o = new Outbox(1, 1);
    for (let i = 0; i < MAX_BATCH_EVENTS * 2 + 5; i++) o.push(msg(String(i)));
    const sizes = [];
    for (let b = o.nextBatch(); b; b = o.nextBatch()) sizes.push(b.events.length);
    expect(sizes).toEqual([MAX_BATCH_EVENTS, MAX_BATCH_EVENTS, 5]);
  });

  it('is done only once job.finished is acked, and refuses events after it', () => {
    const o = new Outbox(1, 1);
    o.push(msg('a'));
    o.push({ type: 'job.finished', data: { status: 'succeeded' } });
    expect(o.done).toBe(false);
    expect(() => o.push(msg('late'))).toThrow('job 1 attempt 1: event after job.finished');
    o.ack(1);
    expect(o.done).toBe(false);
    o.ack(2);
    expect(o.done).toBe(true);
  });

  it('sends at most MAX_IN_FLIGHT_EVENTS (1,000) unacknowledged; an ack opens the window by what it acknowledged', () => {
    expect(MAX_IN_FLIGHT_EVENTS).toBe(1000);
    const o = new Outbox(1, 1);
    for (let i = 0; i < 2500; i++) o.push(msg(`line ${i}`));
    const sent: number[] = [];
    for (let b = o.nextBatch(); b; b = o.nextBatch()) sent.push(...b.events.map((e) => e.rseq));
    expect(sent).toEqual(Array.from({ length: 1000 }, (_, i) => i + 1)); // 5 batches of 200, then nothing
    o.ack(150); // 150 acknowledged: room for 150 more
    const more = o.nextBatch();
    expect(rseqs(more)).toEqual(Array.from({ length: 150 }, (_, i) => 1001 + i));
    expect(o.nextBatch()).toBeNull();
    o.rewind(); // a new connection: the 1,000 unacknowledged go again first, in order
    expect(rseqs(o.nextBatch())?.slice(0, 2)).toEqual([151, 152]);
  });

  it('200,000 events acknowledged in uneven steps: each delivered in order, the last ack leaves none held', () => {
    const o = new Outbox(1, 1);
    const N = 200_000;
    let delivered = 0;
    let expected = 1;
    let step = 1;
    for (let i = 0; i < N; i++) {
      o.push(msg('x'));
      if (i % 997 !== 0 && i !== N - 1) continue;
      for (let b = o.nextBatch(); b; b = o.nextBatch()) {
        for (const e of b.events) if (e.rseq !== expected++) throw new Error(`rseq ${e.rseq} sent where ${expected - 1} was due`);
        delivered += b.events.length;
        o.ack(b.events.at(-1)!.rseq - (step++ % 3)); // acks that lag by 0-2 events
      }
    }
    o.ack(N);
    for (let b = o.nextBatch(); b; b = o.nextBatch()) delivered += b.events.length;
    expect([delivered, o.unacked, o.ackedUpTo]).toEqual([N, 0, N]);
  });
});
