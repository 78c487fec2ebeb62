/**
 * OpenAI's Chat Completions search models (`gpt-4o-search-preview`,
 * `gpt-4o-mini-search-preview`) search the web on every request and OpenAI bills that search
 * per request, though the reply counts it nowhere (issue 3, server-tools.ts): each call they
 * serve is charged one search at the model's `webSearch` price (data/prices.json: $25 per
 * 1,000 = 25,000 µ$), and the reservation holds it. Refused and failed calls are not charged.
 * Prices (USD per million tokens): gpt-4o-search-preview 2.50 / 10, gpt-4o-mini-search-preview
 * 0.15 / 0.60, gpt-4o 2.50 / 10. Real HTTP, a fake OpenAI upstream.
 */
import { describe, expect, it } from 'vitest';
import { webSearchBound } from './server-tools.js';
import { forFile, startGateway } from './test-server.js';
import { RecordingStore } from './test-stores.js';

const USAGE = { prompt_tokens: 100, completion_tokens: 50 };
const gw = forFile(() =>
  startGateway({
    upstream: (r) => {
      const body = JSON.parse(r.body) as { model: string; stream?: boolean; messages: Array<{ content: string }> };
      const what = body.messages[0]!.content;
      if (what === 'bad') return { status: 400, body: JSON.stringify({ error: { message: 'bad request', type: 'invalid_request_error', param: null, code: null } }) };
      if (what === 'not-json') return { body: 'upstream proxy error page' }; // 25 bytes
      if (body.stream) {
        const chunk = (o: object) => `data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', model: body.model, ...o })}\n\n`;
        return { headers: { 'content-type': 'text/event-stream' }, body: [chunk({ choices: [{ index: 0, delta: { content: 'found it' } }] }), chunk({ choices: [], usage: USAGE }), 'data: [DONE]\n\n'] };
      }
      return { body: JSON.stringify({ id: 'c', object: 'chat.completion', model: body.model, choices: [{ index: 0, message: { role: 'assistant', content: 'found it' } }], usage: USAGE }) };
    },
    store: new RecordingStore(),
    job: { token: 'flj_chatsearch_0123456789abcdefghi', id: 4, budgetMicros: 100_000_000 },
    openai: 'openai',
  }),
);

async function chat(model: string, content = 'weather in Paris?', extra: object = {}) {
  const body = JSON.stringify({ model, messages: [{ role: 'user', content }], web_search_options: {}, ...extra });
  const res = await gw.post('/v1/chat/completions', body);
  const text = await res.text();
  await expect.poll(() => gw.store.calls.length, { timeout: 2000, interval: 10 }).toBe(1);
  return { status: res.status, text, bytes: Buffer.byteLength(body), row: gw.store.calls[0]! };
}

describe('Chat Completions search models: one search charged per call', () => {
  it('gpt-4o-search-preview, not streamed: tokens plus one search', async () => {
    const { status, row } = await chat('gpt-4o-search-preview');
    expect(status).toBe(200);
    // 100 × 2.50 = 250; 50 × 10 = 500; 1 search × $25 / 1,000 = 25,000 → 25,750 µ$
    expect(row).toMatchObject({ usageKnown: true, inputTokens: 100, outputTokens: 50, webSearchRequests: 1, costMicros: 25_750 });
  });

  it('gpt-4o-mini-search-preview (dated), streamed: tokens plus one search', async () => {
    const { status, text, row } = await chat('gpt-4o-mini-search-preview-2025-03-11', 'weather in Paris?', { stream: true });
    expect(status).toBe(200);
    expect(text).toContain('found it');
    // 100 × 0.15 = 15; 50 × 0.60 = 30; 1 search = 25,000 → 25,045 µ$
    expect(row).toMatchObject({ usageKnown: true, webSearchRequests: 1, costMicros: 25_045 });
  });

  it('gpt-5-search-api (priced as gpt-5, $1.25 / $10, search $10 / 1,000): tokens plus one search', async () => {
    const { status, row } = await chat('gpt-5-search-api', 'weather in Paris?', { max_completion_tokens: 100 });
    expect(status).toBe(200);
    // 100 × 1.25 = 125; 50 × 10 = 500; 1 search × $10 / 1,000 = 10,000 → 10,625 µ$
    expect(row).toMatchObject({ usageKnown: true, inputTokens: 100, outputTokens: 50, webSearchRequests: 1, costMicros: 10_625 });
  });

  it('the reservation holds the search: output at the model\'s maximum (16,384, sent upstream) plus 25,000 µ$', async () => {
    const { bytes } = await chat('gpt-4o-search-preview');
    // ⌈bytes / 3⌉ input tokens + 10,000 for the search's results (server-input.ts) × $2.50/MTok;
    // 16,384 output × $10/MTok = 163,840 µ$; 1 search 25,000 µ$
    expect(gw.store.held).toEqual([{ micros: Math.ceil(((Math.ceil(bytes / 3) + 10_000) * 2_500_000) / 1e6) + 163_840 + 25_000, call: expect.objectContaining({ webSearchRequests: 1, outputTokens: 16_384 }) }]);
    expect(JSON.parse(gw.up.seen[0]!.body)).toMatchObject({ max_completion_tokens: 16_384 });
  });

  it('a reply that is not JSON: charged the estimate with its search', async () => {
    const { row, bytes } = await chat('gpt-4o-search-preview', 'not-json');
    // input ⌈bytes/4⌉ × 2.50 µ$; output ⌈25/4⌉ = 7 × 10 = 70 µ$; 1 search 25,000 µ$ (rounded half up once)
    const input = Math.ceil(bytes / 4);
    expect(row).toMatchObject({ usageKnown: false, inputTokens: input, outputTokens: 7, webSearchRequests: 1, costMicros: Math.round(input * 2.5 + 70 + 25_000) });
  });

  it('an upstream error (400) is not charged a search', async () => {
    const { status, row } = await chat('gpt-4o-search-preview', 'bad');
    expect(status).toBe(400);
    expect(row).toMatchObject({ httpStatus: 400, webSearchRequests: 0, costMicros: 0 });
  });

  it('gpt-4o (not a search model) is charged no search', async () => {
    const { row } = await chat('gpt-4o');
    // 100 × 2.50 + 50 × 10 = 750 µ$
    expect(row).toMatchObject({ usageKnown: true, webSearchRequests: 0, costMicros: 750 });
  });

  it('webSearchBound: one search per call for the search models on Chat Completions only', () => {
    expect(webSearchBound({ model: 'gpt-4o-search-preview' }, 'openai-chat')).toEqual({ uses: 1, declared: true, perCall: true });
    expect(webSearchBound({ model: 'gpt-4o-mini-search-preview-2025-03-11' }, 'openai-chat')).toEqual({ uses: 1, declared: true, perCall: true });
    expect(webSearchBound({ model: 'gpt-4o' }, 'openai-chat')).toBeNull();
    expect(webSearchBound({ model: 'gpt-4o-search-preview-extra' }, 'openai-chat')).toBeNull();
  });
});
