/**
 * A cancelled job's live model calls stop at once (live-calls.ts, `Gateway.abortJob`): a slow
 * upstream stream is no longer read (its connection closes), the client's stream ends, and the
 * call is settled with the usage seen so far, marked estimated, never $0. Through the node:http
 * path (what the control plane serves) and the web adapter, against a fake upstream.
 * Prices: claude-sonnet-4-5 from the shipped table, 3 µ$ per input token, 15 per output token.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { liveCallCount } from './live-calls.js';
import { startGateway } from './test-server.js';
import { fakeUpstream, firstMessage, readToEnd, readUntil, type FakeUpstream } from './test-upstream.js';

const sse = (event: string, data: unknown) => `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
const DELTA = sse('content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'x'.repeat(400) } });

let up: FakeUpstream;
/** Upstream requests by their first message's content: when each closed (ms epoch). */
const closedAt = new Map<string, number>();

beforeAll(async () => {
  up = await fakeUpstream((req) => (res) => {
    const what = firstMessage(req);
    res.on('close', () => closedAt.set(what, Date.now()));
    if (what.startsWith('hold')) return; // never answers
    // A slow stream: the start and one delta at once, then a delta every 300 ms, never ending.
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write(sse('message_start', { type: 'message_start', message: { id: 'm', type: 'message', role: 'assistant', model: 'claude-sonnet-4-5', content: [], stop_reason: null, usage: { input_tokens: 10, output_tokens: 1 } } }));
    res.write(sse('content_block_start', { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }));
    res.write(DELTA);
    const t = setInterval(() => res.write(DELTA), 300);
    res.on('close', () => clearInterval(t));
  });
});
afterAll(() => up.close());

/** A gateway over a fresh store with job `jobId` running under `token`, served on node:http or through fetch. */
const gateway = (token: string, jobId: number, via: 'node' | 'fetch') => startGateway({ upstream: up, job: { token, id: jobId, budgetMicros: 5_000_000 }, via });

const body = (content: string, stream: boolean) => JSON.stringify({ model: 'claude-sonnet-4-5', max_tokens: 1000, stream, messages: [{ role: 'user', content }] });

describe('aborting a cancelled job’s live calls', () => {
  for (const via of ['node', 'fetch'] as const) {
    it(`a stream mid-way (${via}): the client's stream ends within 1 s, the upstream connection closes, the call is charged what was seen`, async () => {
      const token = `flj_live_${via}_0123456789abcdefghij`;
      const what = `stream-${via}`;
      const gw = await gateway(token, 31, via);
      try {
        const sent = body(what, true);
        const res = await gw.post('/v1/messages', sent);
        expect(res.status).toBe(200);
        const reader = res.body!.getReader();
        await readUntil(reader, 'content_block_delta');
        expect(liveCallCount(31)).toBe(1);
        // the job is cancelled: its token dies and the control plane aborts its calls
        gw.store.removeToken(token);
        const t0 = Date.now();
        expect(gw.app.abortJob(31)).toBe(1);
        await readToEnd(reader, 3_000); // without the abort the stream never ends
        expect(Date.now() - t0).toBeLessThan(1_000);
        await expect.poll(() => closedAt.get(what), { timeout: 1_000, interval: 20 }).toBeDefined();
        expect(closedAt.get(what)! - t0).toBeLessThan(1_000);
        await expect.poll(() => gw.store.calls.length, { timeout: 1_000, interval: 20 }).toBe(1);
        const c = gw.store.calls[0]!;
        // message_start said 10 input: the provider's count of the input, charged as it said (not
        // the larger guess by size, ⌈bytes/4⌉); output: at least the 400-byte delta seen
        // (⌈400/4⌉ = 100 tokens), under max_tokens
        const input = 10;
        expect(Math.ceil(Buffer.byteLength(sent) / 4)).toBeGreaterThan(input); // the guess it no longer takes
        expect(c).toMatchObject({ jobId: 31, httpStatus: 200, streamed: true, usageKnown: false, inputTokens: input });
        expect(c.outputTokens).toBeGreaterThanOrEqual(100);
        expect(c.outputTokens).toBeLessThanOrEqual(1000);
        expect(c.costMicros).toBe(input * 3 + c.outputTokens * 15);
        expect(gw.store.budgets.get(31)).toMatchObject({ spent: c.costMicros, reserved: 0 });
        expect(liveCallCount(31)).toBe(0);
      } finally {
        await gw.close();
      }
    });
  }

  it('a call still waiting for the upstream: aborted at once (502), the upstream connection closes, charged an estimate', async () => {
    const token = 'flj_live_hold_0123456789abcdefghij';
    const gw = await gateway(token, 32, 'node');
    try {
      const sent = body('hold-1', false);
      const pending = gw.post('/v1/messages', sent);
      await expect.poll(() => liveCallCount(32), { timeout: 5_000, interval: 20 }).toBe(1);
      const t0 = Date.now();
      expect(gw.app.abortJob(32)).toBe(1);
      const res = await pending;
      expect(res.status).toBe(502);
      expect(res.headers.get('x-should-retry')).toBe('false');
      // the cause named, not "the model provider could not be reached" (it was reached)
      expect(await res.json()).toEqual({
        type: 'error',
        error: { type: 'api_error', message: "this call was cut before its reply: its job's attempt ended (cancelled, lost, finished or retried), and its token no longer authenticates" },
      });
      expect(Date.now() - t0).toBeLessThan(1_000);
      await expect.poll(() => closedAt.get('hold-1'), { timeout: 1_000, interval: 20 }).toBeDefined();
      const input = Math.ceil(Buffer.byteLength(sent) / 4);
      expect(gw.store.calls).toEqual([expect.objectContaining({ jobId: 32, usageKnown: false, inputTokens: input, outputTokens: 1, costMicros: input * 3 + 15 })]);
      expect(gw.store.budgets.get(32)).toMatchObject({ reserved: 0 });
    } finally {
      await gw.close();
    }
  });

  it('every live call of the job is aborted; another job’s calls, and a job with none, are left alone', async () => {
    const token = 'flj_live_other_0123456789abcdefghi';
    const gw = await gateway(token, 33, 'node');
    try {
      const send = (what: string) => gw.post('/v1/messages', body(what, false));
      const pending = [send('hold-2'), send('hold-3')];
      await expect.poll(() => liveCallCount(33), { timeout: 5_000, interval: 20 }).toBe(2);
      // both sent upstream (which may bill them): an abort before that owes nothing and is recorded $0
      await expect.poll(() => up.seen.filter((r) => ['hold-2', 'hold-3'].includes(firstMessage(r))).length, { timeout: 5_000, interval: 20 }).toBe(2);
      expect(gw.app.abortJob(34)).toBe(0);
      expect(liveCallCount(33)).toBe(2);
      expect(gw.app.abortJob(33)).toBe(2);
      expect(liveCallCount(33)).toBe(0);
      expect((await Promise.all(pending)).map((r) => r.status)).toEqual([502, 502]);
      await expect.poll(() => gw.store.calls.length, { timeout: 5_000, interval: 20 }).toBe(2);
      expect(gw.store.calls.every((c) => c.usageKnown === false && c.costMicros > 0)).toBe(true);
    } finally {
      await gw.close();
    }
  });
});
