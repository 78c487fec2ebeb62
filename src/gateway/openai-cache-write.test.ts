/**
 * OpenAI's prompt-cache writes (GPT-5.6 and later report them as
 * `input_tokens_details.cache_write_tokens`, inside the input figure, as cached reads are):
 * split out of the input and priced at the cache-write rate, not at the input rate. Real HTTP
 * through the gateway to a fake OpenAI upstream, with the shipped price table: gpt-5.6-sol
 * input $5, output $30, cache write $6.25, cache read $0.50 per million (µ$ per token).
 */
import { describe, expect, it } from 'vitest';
import { usageFromOpenAi } from './openai-usage.js';
import { sse, SSE_HEADERS } from './test-metering.js';
import { forFile, startGateway } from './test-server.js';

const TOKEN = 'flj_cachewrite_' + 'c'.repeat(24);
const gw = forFile(() => startGateway({ openai: 'openai', job: { token: TOKEN, id: 7, budgetMicros: 10_000_000 } }));

// input 1,000 of which 200 cached and 300 written; output 50:
// 500 × 5 + 300 × 6.25 + 200 × 0.5 + 50 × 30 = 2,500 + 1,875 + 100 + 1,500 = 5,975 µ$
const usage = { input_tokens: 1000, input_tokens_details: { cached_tokens: 200, cache_write_tokens: 300 }, output_tokens: 50, total_tokens: 1050 };
const COST = 5975;

describe('usageFromOpenAi: cache writes', () => {
  it('splits reads and writes out of the input figure', () => {
    expect(usageFromOpenAi(usage)).toEqual({ inputTokens: 500, outputTokens: 50, cacheReadTokens: 200, cacheWriteTokens: 300, cacheWrite1hTokens: 0 });
  });
  it('Chat Completions shape (prompt_tokens_details) alike; no field: no writes', () => {
    expect(usageFromOpenAi({ prompt_tokens: 100, completion_tokens: 5, prompt_tokens_details: { cached_tokens: 10, cache_write_tokens: 40 } })).toMatchObject({ inputTokens: 50, cacheReadTokens: 10, cacheWriteTokens: 40 });
    expect(usageFromOpenAi({ prompt_tokens: 100, completion_tokens: 5, prompt_tokens_details: { cached_tokens: 10 } })).toMatchObject({ inputTokens: 90, cacheWriteTokens: 0 });
  });
  it('more written than the input holds: at most what is left; an impossible figure: unknown', () => {
    expect(usageFromOpenAi({ input_tokens: 100, output_tokens: 1, input_tokens_details: { cached_tokens: 80, cache_write_tokens: 50 } })).toMatchObject({ inputTokens: 0, cacheReadTokens: 80, cacheWriteTokens: 20 });
    expect(usageFromOpenAi({ input_tokens: 100, output_tokens: 1, input_tokens_details: { cache_write_tokens: -3 } })).toBeNull();
  });
});

describe('a Responses call of gpt-5.6-sol with cache writes', () => {
  it('not streamed: charged 5,975 µ$', async () => {
    gw.setReply({ body: JSON.stringify({ id: 'r', object: 'response', model: 'gpt-5.6-sol', status: 'completed', output: [], usage }) });
    const res = await gw.post('/v1/responses', { model: 'gpt-5.6-sol', input: 'hi', max_output_tokens: 100 });
    expect(res.status).toBe(200);
    await res.text();
    expect(gw.store.calls.map((c) => [c.inputTokens, c.cacheWriteTokens, c.cacheReadTokens, c.outputTokens, c.costMicros])).toEqual([[500, 300, 200, 50, COST]]);
  });

  it('streamed (response.completed): the same 5,975 µ$', async () => {
    gw.setReply({
      headers: SSE_HEADERS,
      body: [
        sse('response.created', { response: { id: 'r', model: 'gpt-5.6-sol', status: 'in_progress' } }),
        sse('response.output_text.delta', { item_id: 'i', output_index: 0, content_index: 0, delta: 'hi' }),
        sse('response.completed', { response: { id: 'r', model: 'gpt-5.6-sol', status: 'completed', output: [], usage } }),
      ],
    });
    const res = await gw.post('/v1/responses', { model: 'gpt-5.6-sol', input: 'hi', max_output_tokens: 100, stream: true });
    expect(res.status).toBe(200);
    await res.text();
    expect(gw.store.calls.map((c) => [c.inputTokens, c.cacheWriteTokens, c.cacheReadTokens, c.outputTokens, c.costMicros, c.usageKnown])).toEqual([[500, 300, 200, 50, COST, true]]);
  });
});
