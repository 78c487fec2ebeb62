/**
 * A cancelled job's live model calls stop at once (live-calls.ts, `Gateway.abortJob`): a slow
 * upstream stream is no longer read (its connection closes), the client's stream ends, and the
 * call is settled with the usage seen so far, marked estimated, never $0. Through the node:http
 * path (what the control plane serves) and the web adapter, against a fake upstream.
 * Prices: claude-sonnet-4-5 from the shipped table, 3 µ$ per input token, 15 per output token.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createGateway, type Gateway } from './gateway.js';
import { liveCallCount } from './live-calls.js';
import { MemoryGatewayStore } from './memory-store.js';
import { loadPriceTable } from './prices.js';
import { listen, type TestServer } from './test-server.js';

const sse = (event: string, data: unknown) => `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
const DELTA = sse('content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'x'.repeat(400) } });

let up: Server;
/** Upstream requests by their first message's content: when each closed (ms epoch). */
const closedAt = new Map<string, number>();
let upUrl = '';

beforeAll(async () => {
  up = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      const what = String((JSON.parse(body) as { messages: Array<{ content: string }> }).messages[0]?.content);
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
  await new Promise<void>((r) => up.listen(0, '127.0.0.1', r));
  upUrl = `http://127.0.0.1:${(up.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((r) => up.close(() => r())));

/** A gateway over a fresh store with job `jobId` running under `token`, served on node:http or through fetch. */
async function gateway(token: string, jobId: number, via: 'node' | 'fetch'): Promise<{ app: Gateway; store: MemoryGatewayStore; url: string; close(): Promise<void> }> {
  const store = new MemoryGatewayStore();
  store.addJob(token, { id: jobId, budgetMicros: 5_000_000 });
  const app = createGateway({ store, config: { provider: 'anthropic', anthropicApiKey: 'sk-up', anthropicBaseUrl: upUrl, prices: loadPriceTable() }, scriptFor: async () => null });
  if (via === 'fetch') {
    const s: TestServer = await listen(app.fetch);
    return { app, store, url: s.url, close: () => s.close() };
  }
  const s = createServer(app.node);
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  return {
    app,
    store,
    url: `http://127.0.0.1:${(s.address() as AddressInfo).port}`,
    close: () =>
      new Promise<void>((r) => {
        s.closeAllConnections();
        s.close(() => r());
      }),
  };
}

const body = (content: string, stream: boolean) => JSON.stringify({ model: 'claude-sonnet-4-5', max_tokens: 1000, stream, messages: [{ role: 'user', content }] });

describe('aborting a cancelled job’s live calls', () => {
  for (const via of ['node', 'fetch'] as const) {
    it(`a stream mid-way (${via}): the client's stream ends within 1 s, the upstream connection closes, the call is charged what was seen`, async () => {
      const token = `flj_live_${via}_0123456789abcdefghij`;
      const what = `stream-${via}`;
      const gw = await gateway(token, 31, via);
      try {
        const sent = body(what, true);
        const res = await fetch(gw.url + '/v1/messages', { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': token }, body: sent });
        expect(res.status).toBe(200);
        const reader = res.body!.getReader();
        let text = '';
        while (!text.includes('content_block_delta')) {
          const n = await reader.read();
          if (n.done) throw new Error('the stream ended early');
          text += Buffer.from(n.value).toString();
        }
        expect(liveCallCount(31)).toBe(1);
        // the job is cancelled: its token dies and the control plane aborts its calls
        gw.store.removeToken(token);
        const t0 = Date.now();
        expect(gw.app.abortJob(31)).toBe(1);
        const ended = (async () => {
          try {
            for (;;) if ((await reader.read()).done) return 'done';
          } catch {
            return 'cut';
          }
        })();
        const giveUp = setTimeout(() => void reader.cancel(), 3_000); // without the abort the stream never ends
        await ended;
        clearTimeout(giveUp);
        expect(Date.now() - t0).toBeLessThan(1_000);
        await expect.poll(() => closedAt.get(what), { timeout: 1_000, interval: 20 }).toBeDefined();
        expect(closedAt.get(what)! - t0).toBeLessThan(1_000);
        await expect.poll(() => gw.store.calls.length, { timeout: 1_000, interval: 20 }).toBe(1);
        const c = gw.store.calls[0]!;
        // message_start said 10 input; the input estimate by size (⌈bytes/4⌉) is larger and wins;
        // output: at least the 400-byte delta seen (⌈400/4⌉ = 100 tokens), under max_tokens
        const input = Math.ceil(Buffer.byteLength(sent) / 4);
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
      const pending = fetch(gw.url + '/v1/messages', { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': token }, body: sent });
      await expect.poll(() => liveCallCount(32), { timeout: 5_000, interval: 20 }).toBe(1);
      const t0 = Date.now();
      expect(gw.app.abortJob(32)).toBe(1);
      const res = await pending;
      expect(res.status).toBe(502);
      await res.arrayBuffer();
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
      const send = (what: string) => fetch(gw.url + '/v1/messages', { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': token }, body: body(what, false) });
      const pending = [send('hold-2'), send('hold-3')];
      await expect.poll(() => liveCallCount(33), { timeout: 5_000, interval: 20 }).toBe(2);
      expect(gw.app.abortJob(34)).toBe(0);
      expect(liveCallCount(33)).toBe(2);
      expect(gw.app.abortJob(33)).toBe(2);
      expect(liveCallCount(33)).toBe(0);
      expect((await Promise.all(pending)).map((r) => r.status)).toEqual([502, 502]);
      await expect.poll(() => gw.store.calls.length, { timeout: 1_000, interval: 20 }).toBe(2);
      expect(gw.store.calls.every((c) => c.usageKnown === false && c.costMicros > 0)).toBe(true);
    } finally {
      await gw.close();
    }
  });
});
