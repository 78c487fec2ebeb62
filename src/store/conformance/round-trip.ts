import { expect, it } from 'vitest';
import { fakeHash, type Harness } from './harness.js';

export function roundTripTests(h: Harness): void {
  it('round-trips JSON (nested, unicode, null) and 64-bit integers exactly', async () => {
    const s = await h.open();
    const big = 1_800_000_000_000;
    const input = {
      repo: 'examples/calc',
      nested: { list: [1, 2.5, { deep: ['ü', '日本語', '🚀'] }], empty: {}, nothing: null, yes: true },
      quote: 'a "quoted" \\ back\nslash',
    };
    const selector = { 'k8s.io/arch': 'amd64', city: 'Zürich' };
    const j = await s.createJob({ parentId: null, agent: 'ünï', agentVersion: 'v1', input, selector, priority: -100, budgetMicros: Number.MAX_SAFE_INTEGER, now: big });
    const got = await s.getJob(j.id);
    expect(got).toEqual(j);
    expect(got?.input).toEqual(input);
    expect(got?.selector).toEqual(selector);
    expect(got?.createdAt).toBe(big);
    expect(got?.budgetMicros).toBe(9_007_199_254_740_991);
    expect(got?.priority).toBe(-100);
    expect(typeof got?.createdAt).toBe('number');
    expect(typeof got?.budgetMicros).toBe('number');

    const r = await s.createRunner({ name: 'Ünïcode runner', labels: selector, capacity: 4, credentialHash: fakeHash('c'), now: big + 1 });
    expect(await s.getRunner(r.id)).toEqual({ ...r, labels: selector, createdAt: big + 1 });
    const claimed = await s.claimJob({ id: r.id, labels: selector }, fakeHash('t'), big + 2);
    expect(claimed).toMatchObject({ id: j.id, assignedAt: big + 2 });
    const ev = await s.appendRunnerEvents(j.id, 1, [{ type: 'tool.call', data: { id: 't', name: 'Edit', input }, rseq: 1, at: '2027-01-15T08:00:00.002Z' }]);
    expect(ev).toMatchObject({ accepted: true });
    expect((await s.listEvents(j.id, 0, 10))[0]).toEqual({ seq: 1, jobId: j.id, at: '2027-01-15T08:00:00.002Z', type: 'tool.call', data: { id: 't', name: 'Edit', input } });
    const result = { summary: 'Ça marche ✅', changedFiles: ['src/ß.js'], needsHuman: false };
    const done = await s.transitionJob(j.id, 1, ['assigned'], 'succeeded', big + 3, { result });
    expect((await s.getJob(j.id))?.result).toEqual(result);
    expect(done?.finishedAt).toBe(big + 3);
  });

  it('NUL characters and lone surrogates (unstorable in PostgreSQL) become U+FFFD on both engines', async () => {
    const s = await h.open();
    const j = await s.createJob({ parentId: null, agent: 'a', agentVersion: '1', input: { bin: 'x\u0000y' }, selector: {}, priority: 0, budgetMicros: 0, now: 1 });
    expect((await s.getJob(j.id))?.input).toEqual({ bin: 'x\uFFFDy' });
    const r = await s.createRunner({ name: 'r', labels: {}, capacity: 1, credentialHash: fakeHash('c'), now: 1 });
    await s.claimJob({ id: r.id, labels: {} }, fakeHash('t'), 2);
    // '\uD83D' alone is half of an emoji; '\uD83D\uDE80' (a whole 🚀) must survive.
    const output = 'a\u0000b\uD83Dc \uD83D\uDE80 \uDE80';
    const ev = await s.appendRunnerEvents(j.id, 1, [{ type: 'tool.result', data: { id: 't', output, isError: false }, rseq: 1, at: 'x' }]);
    expect(ev).toMatchObject({ accepted: true, upTo: 1, stored: [{ seq: 1, data: { output: 'a\uFFFDb\uFFFDc 🚀 \uFFFD' } }] });
    const [stored] = await s.listEvents(j.id, 0, 10);
    expect(stored?.type === 'tool.result' && stored.data.output).toBe('a\uFFFDb\uFFFDc 🚀 \uFFFD');
    const failed = await s.transitionJob(j.id, 1, ['assigned'], 'failed', 3, { error: 'bad\u0000byte' });
    expect(failed?.error).toBe('bad\uFFFDbyte');
  });
}
