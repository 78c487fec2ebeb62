import { describe, expect, it } from 'vitest';
import { PushSource, type PushReader } from './push-source.js';

/** A producer's control that records what the source asked of it. */
function producer() {
  const calls: string[] = [];
  return { calls, control: { resume: () => calls.push('resume'), abort: (e: Error) => calls.push(`abort:${e.name}`) } };
}

/** A reader that records what it got; `room` chunks before it says it is full. */
function reader(room = Infinity) {
  const got: string[] = [];
  let left = room;
  const r: PushReader = {
    data: (c) => (got.push(c.toString()), --left > 0),
    end: () => got.push('<end>'),
    error: (e) => got.push(`<error:${e.message}>`),
    close: () => got.push('<close>'),
  };
  return { got, r, more: (n: number) => (left = n) };
}

const tick = () => new Promise((r) => setTimeout(r, 0));

describe('PushSource (push-source.ts)', () => {
  it('hands each chunk to the attached reader in the producer\'s own call; a full reader pauses the producer until it resumes', async () => {
    const p = producer();
    const s = new PushSource(p.control);
    const rd = reader(2);
    s.attach(rd.r);
    await tick();
    expect(s.push(Buffer.from('a'))).toBe(true);
    expect(rd.got).toEqual(['a']); // synchronously
    expect(s.push(Buffer.from('b'))).toBe(false); // the reader is full now
    expect(s.push(Buffer.from('c'))).toBe(false); // kept (a producer may have one in flight)
    expect(rd.got).toEqual(['a', 'b']);
    expect(p.calls).toEqual([]);
    rd.more(10);
    s.resume();
    expect(rd.got).toEqual(['a', 'b', 'c']);
    expect(p.calls).toEqual(['resume']);
    s.end();
    expect(rd.got).toEqual(['a', 'b', 'c', '<end>']);
    expect(s.destroyed).toBe(false);
    s.destroy(); // after the end: nothing to abort
    expect(p.calls).toEqual(['resume']);
  });

  it('keeps what comes before the reader (pausing the producer past the high-water mark) and hands it over in order, then the end', async () => {
    const p = producer();
    const s = new PushSource(p.control);
    const big = Buffer.alloc(PushSource.highWaterMark / 2, 'x');
    expect(s.push(Buffer.from('1'))).toBe(true);
    expect(s.push(big)).toBe(true);
    expect(s.push(big)).toBe(false); // past the mark
    s.end();
    expect(s.buffered).toBe(true);
    const rd = reader();
    s.attach(rd.r);
    expect(rd.got).toEqual([]); // from a microtask, like a Readable's first 'data'
    await tick();
    expect(rd.got.map((g) => g.slice(0, 5))).toEqual(['1', 'xxxxx', 'xxxxx', '<end>']);
    expect(s.buffered).toBe(false);
    expect(p.calls).toEqual([]); // it had ended: no resume
  });

  it('a failure before or after the reader comes reaches it once, after the chunks kept before it; later chunks are refused', async () => {
    const early = new PushSource(producer().control);
    early.push(Buffer.from('lost'));
    early.fail(new Error('reset'));
    expect(early.push(Buffer.from('x'))).toBe(false);
    const a = reader();
    early.attach(a.r);
    await tick();
    // what came before the failure is handed over first (a lagging reader loses nothing)
    expect(a.got).toEqual(['lost', '<error:reset>']);
    expect(early.destroyed).toBe(true);

    const late = new PushSource(producer().control);
    const b = reader();
    late.attach(b.r);
    await tick();
    late.push(Buffer.from('1'));
    late.fail(new Error('reset'));
    late.fail(new Error('again'));
    late.end();
    expect(b.got).toEqual(['1', '<error:reset>']);
  });

  it('a reader that stops early aborts the producer once and gets its close', async () => {
    const p = producer();
    const s = new PushSource(p.control);
    const rd = reader();
    s.attach(rd.r);
    await tick();
    s.push(Buffer.from('1'));
    s.destroy();
    s.destroy();
    expect(s.push(Buffer.from('2'))).toBe(false);
    expect(rd.got).toEqual(['1', '<close>']);
    expect(p.calls).toEqual(['abort:AbortError']);
  });

  it('iterates: chunks in order with the producer resumed as the kept bytes go down; an early return aborts it; one reader only', async () => {
    const big = Buffer.alloc(PushSource.highWaterMark, 'y');
    const q = producer();
    const t = new PushSource(q.control);
    t.push(big);
    const iter = t[Symbol.asyncIterator]();
    expect((await iter.next()).value.length).toBe(big.length);
    expect(q.calls).toEqual(['resume']); // the kept bytes went under the mark
    const next = iter.next();
    t.push(Buffer.from('z'));
    expect(Buffer.from((await next).value as Uint8Array).toString()).toBe('z');
    expect(() => t.attach(reader().r)).toThrow('one reader');
    await iter.return(undefined);
    expect(q.calls).toEqual(['resume', 'abort:AbortError']);
  });

  it('iterates to the end, or to the producer\'s error', async () => {
    const s = new PushSource(producer().control);
    s.push(Buffer.from('a'));
    setTimeout(() => (s.push(Buffer.from('b')), s.end()), 5);
    const got: string[] = [];
    for await (const c of s) got.push(Buffer.from(c).toString());
    expect(got).toEqual(['a', 'b']);

    const f = new PushSource(producer().control);
    setTimeout(() => f.fail(new Error('broke')), 5);
    await expect((async () => {
      for await (const c of f) void c;
    })()).rejects.toThrow('broke');
  });

  it('a full reader still gets every kept chunk after a failure, then the error once', async () => {
    const s = new PushSource(producer().control);
    const rd = reader(1);
    s.attach(rd.r);
    await tick();
    s.push(Buffer.from('1')); // fills it
    s.push(Buffer.from('2'));
    s.push(Buffer.from('3'));
    s.fail(new Error('cut'));
    expect(rd.got).toEqual(['1']);
    rd.more(1);
    s.resume();
    expect(rd.got).toEqual(['1', '2']);
    rd.more(10);
    s.resume();
    s.resume();
    expect(rd.got).toEqual(['1', '2', '3', '<error:cut>']);
  });

  it('a reader attached and at once destroyed hears its close once; one attached after a destroy hears it too', async () => {
    const s = new PushSource(producer().control);
    const rd = reader();
    s.attach(rd.r);
    s.destroy();
    await tick();
    expect(rd.got).toEqual(['<close>']);
    const t = new PushSource(producer().control);
    t.destroy();
    const late = reader();
    t.attach(late.r);
    await tick();
    expect(late.got).toEqual(['<close>']);
  });
});
