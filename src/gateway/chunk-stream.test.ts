import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { ChunkStream, type ChunkTransform, type StreamEnd } from './chunk-stream.js';

/** Holds back the last byte of every chunk (like key masking holds a possible key start). */
function holdLast(): ChunkTransform {
  let carry = Buffer.alloc(0);
  return {
    push: (c) => {
      const b = Buffer.concat([carry, c]);
      carry = Buffer.from(b.subarray(b.length - 1));
      return b.subarray(0, b.length - 1);
    },
    end: () => carry,
  };
}
const upper: ChunkTransform = { push: (c) => Buffer.from(c.toString().toUpperCase()) };

function sinkOf(log: string[]) {
  let out = '';
  return {
    sink: { write: (c: Buffer) => ((out += c.toString()), true), end: () => log.push(`end ${out}`), fail: (e: Error) => log.push(`fail ${out} ${e.message}`) },
  };
}

describe('ChunkStream', () => {
  it('push: steps in order, held-back bytes flushed through the later steps, the hook before the end', async () => {
    const log: string[] = [];
    const s = new ChunkStream(Readable.from([Buffer.from('ab'), Buffer.from('cd')]))
      .through(holdLast())
      .through(upper)
      .onFinish(async (how) => void log.push(`hook ${how}`));
    s.pushTo(sinkOf(log).sink);
    await expect.poll(() => log.length).toBe(2);
    expect(log).toEqual(['hook ended', 'end ABCD']);
  });

  it('push: a source error runs the hook as broken, then fails the sink; an already-destroyed source too', async () => {
    const log: string[] = [];
    const src = new Readable({ read() {} });
    new ChunkStream(src).onFinish(async (how, err) => void log.push(`hook ${how} ${err?.message}`)).pushTo(sinkOf(log).sink);
    src.push('x');
    src.destroy(new Error('reset'));
    await expect.poll(() => log.length).toBe(2);
    expect(log).toEqual(['hook broken reset', 'fail x reset']);
    const log2: string[] = [];
    const dead = new Readable({ read() {} });
    dead.on('error', () => undefined); // as upstream-http.ts does: an abort before the reader came
    dead.destroy(new Error('aborted'));
    await new Promise((r) => setImmediate(r));
    new ChunkStream(dead).onFinish(async (how) => void log2.push(`hook ${how}`)).pushTo(sinkOf(log2).sink);
    await expect.poll(() => log2.length).toBe(2);
    expect(log2).toEqual(['hook broken', 'fail  aborted']);
  });

  it('push: cancel() destroys the source and runs the hook once as cancelled; a full sink pauses the source until resume()', async () => {
    const log: string[] = [];
    const ends: StreamEnd[] = [];
    const src = new Readable({ read() {} });
    let writes = 0;
    const ctl = new ChunkStream(src).onFinish(async (how) => void ends.push(how)).pushTo({ write: () => (++writes, false), end: () => log.push('end'), fail: () => log.push('fail') });
    src.push('a');
    await new Promise((r) => setImmediate(r));
    expect(src.isPaused()).toBe(true);
    src.push('b');
    await new Promise((r) => setImmediate(r));
    expect(writes).toBe(1);
    ctl.resume();
    await new Promise((r) => setImmediate(r));
    expect(writes).toBe(2);
    ctl.cancel();
    ctl.cancel();
    await expect.poll(() => log.length).toBe(1);
    expect(src.destroyed).toBe(true);
    expect(ends).toEqual(['cancelled']);
    expect(log).toEqual(['fail']);
  });

  it('pull: the same steps; stopping early runs the hook as cancelled; one reader only', async () => {
    const ends: StreamEnd[] = [];
    const s = new ChunkStream(Readable.from([Buffer.from('ab'), Buffer.from('cd')])).through(holdLast()).through(upper).onFinish(async (how) => void ends.push(how));
    const got: string[] = [];
    for await (const c of s) got.push(Buffer.from(c).toString());
    expect(got.join('')).toBe('ABCD');
    expect(ends).toEqual(['ended']);
    expect(() => s.pushTo(sinkOf([]).sink)).toThrow('one reader');
    const ends2: StreamEnd[] = [];
    const s2 = new ChunkStream(Readable.from([Buffer.from('ab'), Buffer.from('cd')])).onFinish(async (how) => void ends2.push(how));
    for await (const _ of s2) break;
    expect(ends2).toEqual(['cancelled']);
  });
});
