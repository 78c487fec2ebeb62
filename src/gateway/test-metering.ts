import { createGateway } from './gateway.js';
import { MemoryGatewayStore } from './memory-store.js';
import type { PriceTable } from './prices.js';
import { listenNode, type TestServer } from './test-server.js';
import { fakeUpstream, type FakeReply } from './test-upstream.js';

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

/**
 * A gateway on the control plane's node:http path over a {@link MemoryGatewayStore} and a
 * fake upstream serving every wire format (models `claude-*` → anthropic, `gpt-*` →
 * openai-compatible; prices {@link METERING_PRICES}), and one job (id = root = `jobId`) whose
 * token `post` sends. `reply` is what the upstream answers next; `budget(limit)` starts the
 * tree afresh with `limit` µ$ and nothing spent; `spent()` is what the tree was charged;
 * `calls` the ledger rows.
 */
export async function meteringGateway(jobId: number): Promise<{
  store: MemoryGatewayStore;
  setReply(r: FakeReply): void;
  post(path: string, body: string): Promise<Response>;
  budget(limitMicros: number): void;
  spent(): number;
  close(): Promise<void>;
}> {
  const token = `flj_metering_${jobId}_0123456789abcdefghij`;
  let reply: FakeReply = { body: '{}' };
  const up = await fakeUpstream(() => reply);
  const store = new MemoryGatewayStore();
  store.addJob(token, { id: jobId, budgetMicros: 1_000_000 });
  const gateway = createGateway({
    store,
    config: {
      provider: 'anthropic',
      anthropicApiKey: 'sk-up',
      anthropicBaseUrl: up.url,
      openai: { provider: 'openai-compatible', baseUrl: up.url + '/v1', apiKeys: [] },
      modelProviders: [
        { pattern: 'claude-*', provider: 'anthropic' },
        { pattern: 'gpt-*', provider: 'openai-compatible' },
      ],
      prices: METERING_PRICES,
      retry: { retries: 0 },
    },
    scriptFor: async () => null,
  });
  const gw: TestServer = await listenNode((req, res) => gateway.node(req, res));
  return {
    store,
    setReply: (r) => void (reply = r),
    post: async (path, body) => {
      const res = await fetch(gw.url + path, { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': token, authorization: `Bearer ${token}` }, body });
      // the whole reply: a stream's row is written before its end reaches the client
      await res.arrayBuffer();
      return res;
    },
    budget: (limit) => void store.budgets.set(jobId, { limit, spent: 0, reserved: 0 }),
    spent: () => {
      const b = store.budgets.get(jobId)!;
      if (b.reserved !== 0) throw new Error(`tree ${jobId} still holds ${b.reserved} µ$ reserved`);
      return b.spent;
    },
    close: async () => {
      await gw.close();
      await up.close();
    },
  };
}
