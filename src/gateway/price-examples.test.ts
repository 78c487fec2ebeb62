/**
 * Issue 3's price examples, exact to the micro-dollar (and the nano-dollar), each through a
 * real streamed and a real non-streamed call: client → gateway (HTTP) → fake Anthropic upstream
 * (HTTP). Prices of claude-sonnet-4-5 in the shipped table: input $3, output $15, cache write
 * (5 min) $3.75, cache read $0.30 per million tokens, i.e. 3 / 15 / 3.75 / 0.30 µ$ per token.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createGateway } from './gateway.js';
import { MemoryGatewayStore } from './memory-store.js';
import { loadPriceTable } from './prices.js';
import { listen, type TestServer } from './test-server.js';

const TOKEN = 'flj_prices_0123456789abcdefghij';
interface Usage {
  input_tokens: number;
  output_tokens: number;
  cache_creation_input_tokens?: number;
  cache_read_input_tokens?: number;
}
interface Example {
  name: string;
  /** What message_start reports (output ≤ 1, as Anthropic sends it). */
  start: Usage;
  /** message_delta's cumulative output figure. */
  finalOutput: number;
  micros: number;
  nanos: number;
}
const EXAMPLES: Example[] = [
  // 3×3 + 12,304×3.75 + 550×15 = 9 + 46,140 + 8,250 = 54,399 µ$
  { name: '{input 3, cache write 12,304, output 550} = $0.054399', start: { input_tokens: 3, cache_creation_input_tokens: 12_304, cache_read_input_tokens: 0, output_tokens: 1 }, finalOutput: 550, micros: 54_399, nanos: 54_399_000 },
  // 100×3 + 2,000×3.75 + 50,000×0.30 + 1,000×15 = 300 + 7,500 + 15,000 + 15,000 = 37,800 µ$
  { name: '{input 100, cache write 2,000, cache read 50,000, output 1,000} = $0.037800', start: { input_tokens: 100, cache_creation_input_tokens: 2_000, cache_read_input_tokens: 50_000, output_tokens: 1 }, finalOutput: 1_000, micros: 37_800, nanos: 37_800_000 },
  // 4×3 + 2,455×0.30 + 23×15 = 12 + 736.5 + 345 = 1,093.5 µ$ → 1,094 µ$ (half up), 1,093,500 n$ exact
  { name: 'message_start {input 4, cache read 2,455, output 1} + message_delta output 23 = $0.0010935', start: { input_tokens: 4, cache_read_input_tokens: 2_455, output_tokens: 1 }, finalOutput: 23, micros: 1_094, nanos: 1_093_500 },
];

/**
 * The examples' prompts are up to 52,103 input-side tokens, and a prompt (cached or not) is
 * sent whole in every request: at least one byte a token. A shorter body makes such a report
 * impossible, and it would be charged at the body's bound as an estimate (usage.ts boundedUsage).
 */
const PROMPT = 'x'.repeat(60_000);

const ev = (type: string, data: object) => `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;

let upstream: Server;
let gw: TestServer;
const store = new MemoryGatewayStore();
let current: Example = EXAMPLES[0]!;

beforeAll(async () => {
  upstream = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      const stream = (JSON.parse(body) as { stream?: boolean }).stream === true;
      const e = current;
      if (!stream) {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ id: 'msg_1', type: 'message', role: 'assistant', model: 'claude-sonnet-4-5-20250929', content: [{ type: 'text', text: 'ok' }], stop_reason: 'end_turn', usage: { ...e.start, output_tokens: e.finalOutput } }));
        return;
      }
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(ev('message_start', { message: { id: 'msg_1', type: 'message', role: 'assistant', model: 'claude-sonnet-4-5-20250929', content: [], usage: e.start } }));
      res.write(ev('content_block_start', { index: 0, content_block: { type: 'text', text: '' } }));
      res.write(ev('content_block_delta', { index: 0, delta: { type: 'text_delta', text: 'ok' } }));
      res.write(ev('content_block_stop', { index: 0 }));
      // cumulative: the final figure, not an increment (input figures repeated, as the API does)
      res.end(ev('message_delta', { delta: { stop_reason: 'end_turn' }, usage: { output_tokens: e.finalOutput } }) + ev('message_stop', {}));
    });
  });
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
  store.addJob(TOKEN, { id: 3, budgetMicros: 100_000_000 });
  const app = createGateway({
    store,
    config: { provider: 'anthropic', anthropicApiKey: 'sk-up', anthropicBaseUrl: `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`, prices: loadPriceTable() },
    scriptFor: async () => null,
  });
  gw = await listen(app.fetch);
});
afterAll(async () => {
  await gw.close();
  await new Promise<void>((r) => upstream.close(() => r()));
});

describe('price examples of issue 3, streamed and not', () => {
  for (const e of EXAMPLES) {
    for (const stream of [false, true]) {
      it(`${e.name} (${stream ? 'streamed' : 'non-streamed'})`, async () => {
        current = e;
        const before = store.calls.length;
        const res = await fetch(gw.url + '/v1/messages', {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-api-key': TOKEN, 'anthropic-version': '2023-06-01' },
          body: JSON.stringify({ model: 'claude-sonnet-4-5', max_tokens: 2000, stream, messages: [{ role: 'user', content: PROMPT }] }),
        });
        expect(res.status).toBe(200);
        await res.text();
        await expect.poll(() => store.calls.length).toBe(before + 1);
        const row = store.calls[before]!;
        expect(row).toMatchObject({
          streamed: stream,
          usageKnown: true,
          inputTokens: e.start.input_tokens,
          outputTokens: e.finalOutput,
          cacheWriteTokens: e.start.cache_creation_input_tokens ?? 0,
          cacheReadTokens: e.start.cache_read_input_tokens ?? 0,
          costMicros: e.micros,
          costNanos: e.nanos,
        });
      });
    }
  }

  it('the tree was charged exactly the sum of the rounded per-call costs', () => {
    const total = EXAMPLES.reduce((s, e) => s + 2 * e.micros, 0);
    expect(store.budgets.get(3)).toEqual({ limit: 100_000_000, spent: total, reserved: 0 });
  });
});
