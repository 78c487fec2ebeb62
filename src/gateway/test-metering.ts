import type { ServerResponse } from 'node:http';
import type { MemoryGatewayStore } from './memory-store.js';
import type { PriceTable } from './prices.js';
import { SseParser } from './sse.js';
import { startGateway } from './test-server.js';
import type { FakeReply } from './test-upstream.js';

/** A price (USD per million tokens = µ$ per token) in the order input, output, cache write 5 min, cache write 1 h, cache read. */
export const price = (input: number, output: number, cacheWrite5m: number, cacheWrite1h: number, cacheRead: number) => ({ input, output, cacheWrite5m, cacheWrite1h, cacheRead });

/**
 * Prices of the metering tests: `claude-cheap` 3 / 15 / 3.75 / 6 / 0.3 µ$ per token,
 * `claude-dear` 75 / 375 / 93.75 / 150 / 7.5, `gpt-cheap` 2 / 10 / 2 / 2 / 1, `gpt-dear`
 * 50 / 200 / 50 / 50 / 25; any other model 1,000 µ$ a token of every kind (so a call priced
 * by an unexpected name stands out).
 */
export const METERING_PRICES: PriceTable = {
  version: 't',
  models: {
    'claude-cheap': price(3, 15, 3.75, 6, 0.3),
    'claude-dear': price(75, 375, 93.75, 150, 7.5),
    'gpt-cheap': price(2, 10, 2, 2, 1),
    'gpt-dear': price(50, 200, 50, 50, 25),
  },
  default: price(1000, 1000, 1000, 1000, 1000),
};

/** Server-sent event `type` with data `{type, ...data}` (Anthropic and Responses streams). */
export const sse = (type: string, data: object) => `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;

/** A Chat Completions stream chunk `data: {...}` of model `model`. */
export const chatChunk = (model: string, o: object) => `data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', created: 1, model, ...o })}\n\n`;

/** The reply headers of a stream. */
export const SSE_HEADERS = { 'content-type': 'text/event-stream' };

const start = (usage: object) => sse('message_start', { message: { id: 'm', type: 'message', role: 'assistant', model: 'claude-sonnet-4-5', content: [], usage } });
const textBlock = sse('content_block_start', { index: 0, content_block: { type: 'text', text: '' } });
const textDelta = (text: string) => sse('content_block_delta', { index: 0, delta: { type: 'text_delta', text } });

/**
 * A fake upstream's reply: an Anthropic stream of claude-sonnet-4-5 — message_start reporting
 * `usage`, one text block of `text`, a message_delta (end_turn) reporting `final`, message_stop.
 */
export const textStream = (usage: object, text: string, final: object): FakeReply => ({
  headers: SSE_HEADERS,
  body: [start(usage), textBlock, textDelta(text), sse('message_delta', { delta: { stop_reason: 'end_turn' }, usage: final }), sse('message_stop', {})],
});

/**
 * A fake upstream's answer (test-upstream.ts FakeAnswer): an Anthropic stream of
 * claude-sonnet-4-5 that does not end by itself — message_start reporting `usage`, a text
 * block, then a 12-byte delta ("twelve bytes") every 10 ms, about 500 at most — for a client
 * to hang up on; `onClose` runs when its connection closes.
 */
export const endlessStream = (usage: object, onClose: () => void) => (res: ServerResponse) => {
  res.on('close', onClose);
  res.writeHead(200, SSE_HEADERS);
  res.write(start(usage));
  res.write(textBlock);
  let i = 0;
  const t = setInterval(() => {
    if (res.destroyed || i++ > 500) return clearInterval(t);
    res.write(textDelta('twelve bytes'));
  }, 10);
};

/** Reads a streamed reply until `n` SSE events came (or it ended) and leaves the rest unread, for a client that hangs up. @returns how many came. */
export async function readEvents(res: Response, n: number): Promise<number> {
  const reader = res.body!.getReader();
  const parser = new SseParser();
  let events = 0;
  while (events < n) {
    const r = await reader.read();
    if (r.done) break;
    events += parser.push(r.value).length;
  }
  return events;
}

/**
 * A gateway on the control plane's node:http path over a {@link MemoryGatewayStore} and a
 * fake upstream serving every wire format (models `claude-*` → anthropic, `gpt-*` →
 * openai-compatible; prices {@link METERING_PRICES}), and one job (id = root = `jobId`) whose
 * token `post` sends (`post` reads the whole reply: a stream's row is written before its end
 * reaches the client). `reply` is what the upstream answers next; `budget(limit)` starts the
 * tree afresh with `limit` µ$ and nothing spent; `spent()` is what the tree was charged;
 * `reset()` forgets the ledger rows (`store.calls`). Shared by a file's tests: `forFile(() => meteringGateway(id))`.
 */
export async function meteringGateway(jobId: number): Promise<{
  store: MemoryGatewayStore;
  setReply(r: FakeReply): void;
  post(path: string, body: string): Promise<Response>;
  budget(limitMicros: number): void;
  spent(): number;
  reset(): void;
  close(): Promise<void>;
}> {
  const gw = await startGateway({ job: { token: `flj_metering_${jobId}_0123456789abcdefghij`, id: jobId, budgetMicros: 1_000_000 }, openai: 'openai-compatible', config: { prices: METERING_PRICES } });
  return {
    store: gw.store,
    setReply: gw.setReply,
    post: async (path, body) => {
      const res = await gw.post(path, body);
      await res.arrayBuffer();
      return res;
    },
    budget: (limit) => void gw.store.budgets.set(jobId, { limit, spent: 0, reserved: 0 }),
    spent: () => {
      const b = gw.store.budgets.get(jobId)!;
      if (b.reserved !== 0) throw new Error(`tree ${jobId} still holds ${b.reserved} µ$ reserved`);
      return b.spent;
    },
    reset: gw.reset,
    close: gw.close,
  };
}
