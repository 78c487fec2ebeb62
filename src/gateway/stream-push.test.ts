/**
 * The push path of a streamed reply (chunk-stream.ts driven by node-adapter.ts): real HTTP — a
 * fake Anthropic upstream, the gateway on plain node:http, raw node:http clients that read
 * slowly, hang up, or time each event. Prices: claude-sonnet-4-5, 3 µ$ per input token, 15 µ$
 * per output token (data/prices.json).
 */
import { createServer, request, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { SseParser } from './sse.js';
import { createGateway } from './gateway.js';
import { maskedKey } from './key-mask.js';
import { MemoryGatewayStore } from './memory-store.js';
import { loadPriceTable } from './prices.js';

const TOKEN = 'flj_streampush_0123456789abcdefgh';
const KEY = 'sk-ant-server-key-0123456789-WXYZ';
const ev = (type: string, data: object) => `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;
const START = ev('message_start', { message: { id: 'm', type: 'message', role: 'assistant', model: 'claude-sonnet-4-5', content: [], usage: { input_tokens: 1000, output_tokens: 1 } } });
const END = ev('message_delta', { delta: { stop_reason: 'end_turn' }, usage: { output_tokens: 50 } }) + ev('message_stop', {});
/** One content_block_delta of 64 KiB of text: big events fill the socket buffers quickly. */
const BIG = Buffer.from(ev('content_block_delta', { index: 0, delta: { type: 'text_delta', text: 'x'.repeat(65_536) } }));
const BIG_EVENTS = 2_000; // ~128 MiB in all: far more than the sockets between the three can hold

const store = new MemoryGatewayStore();
let up: Server;
let gw: Server;
let gwPort = 0;
/** The upstream's view of the current stream. */
const upstream = { written: 0, closed: false, finished: false, sentAt: [] as number[] };

beforeAll(async () => {
  up = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      const what = (JSON.parse(body) as { messages: Array<{ content: string }> }).messages[0]!.content;
      res.on('close', () => (upstream.closed = true));
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(START);
      if (what === 'big') {
        // As fast as the gateway takes it: write until full, wait for drain.
        let i = 0;
        const pump = () => {
          while (i < BIG_EVENTS && !res.destroyed) {
            i++;
            upstream.written += BIG.byteLength;
            if (!res.write(BIG)) return void res.once('drain', pump);
          }
          if (!res.destroyed) {
            upstream.finished = true;
            res.end(END);
          }
        };
        pump();
      } else if (what === 'split-key') {
        // The server's key echoed in an event, cut in two writes 30 ms apart.
        const text = ev('content_block_delta', { index: 0, delta: { type: 'text_delta', text: `your key is ${KEY}.` } });
        const cut = text.indexOf(KEY) + 10;
        res.write(text.slice(0, cut));
        setTimeout(() => {
          res.write(text.slice(cut));
          res.end(END);
        }, 30);
      } else if (what === 'paced') {
        // 20 events 25 ms apart; the upstream notes when it sent each.
        let i = 0;
        const t = setInterval(() => {
          if (res.destroyed) return clearInterval(t);
          upstream.sentAt.push(performance.now());
          res.write(ev('content_block_delta', { index: 0, delta: { type: 'text_delta', text: `tok${i} ` } }));
          if (++i === 20) {
            clearInterval(t);
            res.end(END);
          }
        }, 25);
      }
    });
  });
  await new Promise<void>((r) => up.listen(0, '127.0.0.1', r));
  store.addJob(TOKEN, { id: 7, budgetMicros: 50_000_000 });
  const gateway = createGateway({
    store,
    config: { provider: 'anthropic', anthropicApiKey: KEY, anthropicBaseUrl: `http://127.0.0.1:${(up.address() as AddressInfo).port}`, prices: loadPriceTable(), retry: { retries: 0 } },
    scriptFor: async () => null,
  });
  gw = createServer((req, res) => gateway.node(req, res));
  await new Promise<void>((r) => gw.listen(0, '127.0.0.1', r));
  gwPort = (gw.address() as AddressInfo).port;
});
afterAll(async () => {
  gw.closeAllConnections();
  up.closeAllConnections();
  await new Promise<void>((r) => gw.close(() => r()));
  await new Promise<void>((r) => up.close(() => r()));
});
beforeEach(() => {
  store.calls.length = 0;
  Object.assign(upstream, { written: 0, closed: false, finished: false, sentAt: [] });
});

/** Starts a streamed call; resolves with the response (not read: it stays paused until a listener reads it). */
function call(content: string, maxTokens = 4000): Promise<IncomingMessage> {
  const body = JSON.stringify({ model: 'claude-sonnet-4-5', max_tokens: maxTokens, stream: true, messages: [{ role: 'user', content }] });
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port: gwPort, path: '/v1/messages', method: 'POST', agent: false, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), 'x-api-key': TOKEN } }, resolve);
    req.on('error', reject);
    req.end(body);
  });
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Waits until the upstream has written nothing for `quietMs`; returns what it had written. */
async function stalled(quietMs = 400): Promise<number> {
  let last = -1;
  while (upstream.written !== last) {
    last = upstream.written;
    await sleep(quietMs);
  }
  return last;
}

describe('streamed replies pushed to node:http', () => {
  it('a client that does not read: the upstream is paused (gateway memory bounded); when it reads, every byte arrives and the call is metered from the stream', async () => {
    const heapBefore = process.memoryUsage().arrayBuffers;
    const res = await call('big');
    res.pause();
    const held = await stalled();
    // What the three sockets' buffers hold, far below the 128 MiB the upstream would send.
    expect(upstream.finished).toBe(false);
    expect(held).toBeLessThan(BIG_EVENTS * BIG.byteLength / 4);
    expect(process.memoryUsage().arrayBuffers - heapBefore).toBeLessThan(32 * 1024 * 1024);
    let bytes = 0;
    const parser = new SseParser();
    let events = 0;
    res.on('data', (c: Buffer) => {
      bytes += c.byteLength;
      events += parser.push(c).length;
    });
    res.resume();
    await new Promise((r) => res.once('end', r));
    expect(upstream.finished).toBe(true);
    expect(bytes).toBe(Buffer.byteLength(START) + BIG_EVENTS * BIG.byteLength + Buffer.byteLength(END));
    expect(events).toBe(1 + BIG_EVENTS + 2);
    // message_start's 1000 input, message_delta's 50 output: 1000 × 3 + 50 × 15 µ$
    expect(store.calls).toHaveLength(1);
    expect(store.calls[0]).toMatchObject({ httpStatus: 200, inputTokens: 1000, outputTokens: 50, usageKnown: true, costMicros: 3750, streamed: true });
  });

  it('a client that hangs up while the stream is paused: the upstream is closed, the call recorded as an estimate and charged', async () => {
    const res = await call('big', 4000);
    res.pause();
    await stalled();
    res.destroy();
    await expect.poll(() => store.calls.length, { timeout: 5000 }).toBe(1);
    await expect.poll(() => upstream.closed, { timeout: 5000 }).toBe(true);
    expect(upstream.finished).toBe(false);
    // Estimate: input 1000 (message_start's, over the request's bytes / 4); output: the text
    // seen (MBs, / 4) capped at max_tokens 4000 → 1000 × 3 + 4000 × 15 µ$.
    expect(store.calls[0]).toMatchObject({ httpStatus: 200, inputTokens: 1000, outputTokens: 4000, usageKnown: false, costMicros: 63_000 });
    expect(store.budgets.get(7)).toMatchObject({ reserved: 0 });
  });

  it('a key the upstream echoes split across two chunks reaches the client masked', async () => {
    const res = await call('split-key');
    let text = '';
    res.on('data', (c: Buffer) => (text += c.toString()));
    await new Promise((r) => res.once('end', r));
    expect(text).not.toContain(KEY);
    expect(text).not.toContain(KEY.slice(0, 10));
    expect(new SseParser().push(text).map((e) => e.data)).toContain(JSON.stringify({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: `your key is ${maskedKey(KEY)}.` } }));
    expect(store.calls[0]).toMatchObject({ usageKnown: true, outputTokens: 50 });
  });

  it("keeps the upstream's pacing: each event reaches the client on its own, soon after the upstream sent it", async () => {
    const res = await call('paced');
    const arrived: number[] = [];
    const parser = new SseParser();
    let chunksWithDeltas = 0;
    res.on('data', (c: Buffer) => {
      const now = performance.now();
      const deltas = parser.push(c).filter((e) => e.event === 'content_block_delta').length;
      if (deltas > 0) chunksWithDeltas++;
      for (let i = 0; i < deltas; i++) arrived.push(now);
    });
    await new Promise((r) => res.once('end', r));
    expect(arrived).toHaveLength(20);
    expect(upstream.sentAt).toHaveLength(20);
    // not batched: 20 separate arrivals, each within 20 ms of its sending (25 ms apart upstream)
    expect(chunksWithDeltas).toBe(20);
    const lag = arrived.map((t, i) => t - upstream.sentAt[i]!);
    expect(Math.max(...lag)).toBeLessThan(20);
    expect(arrived[19]! - arrived[0]!).toBeGreaterThan(19 * 25 * 0.8);
  });
});
