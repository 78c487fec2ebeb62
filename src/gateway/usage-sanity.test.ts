/**
 * Usage an upstream reports is charged as given only when every figure is a possible count:
 * an integer from 0 to 100,000,000 (usage.ts MAX_REPORTED_TOKENS). A negative, fractional,
 * non-number ("NaN") or absurd (1e15) figure makes the call's usage unknown: it is charged the
 * estimate (usage.ts estimateUsage: input ⌈request bytes / 4⌉, output ⌈reply text bytes / 4⌉
 * capped at the request's limit, at least 1) and recorded with usageKnown = false. Real HTTP,
 * a fake upstream reporting each bad figure; gpt-4o: 2.5 µ$ per input and 10 µ$ per output
 * token, claude-sonnet-4-5: 3 and 15 (data/prices.json).
 */
import { describe, expect, it } from 'vitest';
import { textStream } from './test-metering.js';
import { forFile, startGateway } from './test-server.js';
import type { FakeReply } from './test-upstream.js';

/** What the upstream reports next: set by each test. */
let reply: FakeReply = { body: '{}' };
// $10M: room for every call below
const gw = forFile(() => startGateway({ upstream: () => reply, job: { token: 'flj_usage_sanity_0123456789abcdefg', id: 12, budgetMicros: 10_000_000_000_000 }, openai: 'openai-compatible' }));

const anthropicBody = (stream = false) => JSON.stringify({ model: 'claude-sonnet-4-5', max_tokens: 100, stream, messages: [{ role: 'user', content: 'count the tokens' }] });
const message = (usage: object) => JSON.stringify({ id: 'm', type: 'message', role: 'assistant', model: 'claude-sonnet-4-5', content: [{ type: 'text', text: 'ok' }], stop_reason: 'end_turn', usage });
const row = () => {
  const c = gw.store.calls[0]!;
  return { usageKnown: c.usageKnown, input: c.inputTokens, output: c.outputTokens, cacheRead: c.cacheReadTokens, cost: c.costMicros };
};

describe('impossible reported usage is treated as unknown (charged the estimate, marked estimated)', () => {
  const cases: Array<[string, object]> = [
    ['a negative input figure', { input_tokens: -5, output_tokens: 20 }],
    ['a "NaN" string', { input_tokens: 'NaN', output_tokens: 20 }],
    ['1e15 output tokens', { input_tokens: 10, output_tokens: 1e15 }],
    ['a fractional figure', { input_tokens: 10.5, output_tokens: 20 }],
    ['an absurd cache figure', { input_tokens: 10, output_tokens: 20, cache_read_input_tokens: 100_000_001 }],
  ];
  for (const [name, usage] of cases) {
    it(`Anthropic, not streamed: ${name}`, async () => {
      const req = anthropicBody();
      reply = { body: message(usage) };
      const res = await gw.post('/v1/messages', req);
      expect(res.status).toBe(200);
      const input = Math.ceil(Buffer.byteLength(req) / 4);
      const output = Math.min(Math.ceil(Buffer.byteLength(reply.body as string) / 4), 100);
      expect(row()).toEqual({ usageKnown: false, input, output, cacheRead: 0, cost: input * 3 + output * 15 });
    });
  }

  it('the largest possible figure (100,000,000) is a count, not impossible; past max_tokens (100) it is charged at 100, as an estimate (usage-bounds.test.ts)', async () => {
    reply = { body: message({ input_tokens: 0, output_tokens: 100_000_000 }) };
    await gw.post('/v1/messages', anthropicBody());
    // not the by-size estimate (⌈reply bytes / 4⌉ ≈ 48): the reported figure, held to its bound
    expect(row()).toMatchObject({ usageKnown: false, input: 0, output: 100, cost: 100 * 15 });
  });

  it('Anthropic, streamed: message_delta reports 1e15 output tokens → estimated from the stream', async () => {
    reply = textStream({ input_tokens: 1000, output_tokens: 1 }, 'twelve bytes', { output_tokens: 1e15 });
    const res = await gw.post('/v1/messages', anthropicBody(true));
    await res.text();
    // input: the reported 1,000 (valid, more than the body's bytes / 4); output: the larger of
    // the valid reported 1 and ⌈12 text bytes / 4⌉ = 3
    expect(row()).toEqual({ usageKnown: false, input: 1000, output: 3, cacheRead: 0, cost: 1000 * 3 + 3 * 15 });
  });

  it('OpenAI Chat, not streamed: prompt_tokens 1e15 → estimated', async () => {
    const req = JSON.stringify({ model: 'gpt-4o', max_tokens: 50, messages: [{ role: 'user', content: 'hi there' }] });
    reply = { body: JSON.stringify({ id: 'c', object: 'chat.completion', model: 'gpt-4o', choices: [{ index: 0, message: { role: 'assistant', content: 'ok' } }], usage: { prompt_tokens: 1e15, completion_tokens: 2 } }) };
    await gw.post('/v1/chat/completions', req);
    const input = Math.ceil(Buffer.byteLength(req) / 4);
    const output = Math.min(Math.ceil(Buffer.byteLength(reply.body as string) / 4), 50);
    expect(row()).toEqual({ usageKnown: false, input, output, cacheRead: 0, cost: Math.ceil(input * 2.5 + output * 10) });
  });

  it('OpenAI Chat, streamed: the usage chunk reports -3 completion tokens → estimated', async () => {
    const chunk = (o: object) => `data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', model: 'gpt-4o', ...o })}\n\n`;
    reply = {
      headers: { 'content-type': 'text/event-stream' },
      body: [chunk({ choices: [{ index: 0, delta: { content: 'eight by' } }] }), chunk({ choices: [], usage: { prompt_tokens: 40, completion_tokens: -3 } }), 'data: [DONE]\n\n'],
    };
    const req = JSON.stringify({ model: 'gpt-4o', max_tokens: 50, stream: true, stream_options: { include_usage: true }, messages: [{ role: 'user', content: 'hi' }] });
    const res = await gw.post('/v1/chat/completions', req);
    await res.text();
    // no usable usage: input ⌈request bytes / 4⌉, output ⌈8 text bytes / 4⌉ = 2
    const input = Math.ceil(Buffer.byteLength(req) / 4);
    expect(row()).toEqual({ usageKnown: false, input, output: 2, cacheRead: 0, cost: Math.ceil(input * 2.5 + 2 * 10) });
  });

  it('OpenAI Responses, not streamed: cached_tokens "NaN" → estimated; a valid report is still known', async () => {
    const req = JSON.stringify({ model: 'gpt-4o', max_output_tokens: 40, input: 'hello' });
    const body = (usage: object) => JSON.stringify({ id: 'r', object: 'response', model: 'gpt-4o', output: [], usage });
    reply = { body: body({ input_tokens: 30, output_tokens: 5, input_tokens_details: { cached_tokens: 'NaN' } }) };
    await gw.post('/v1/responses', req);
    expect(row().usageKnown).toBe(false);
    gw.store.calls.length = 0;
    reply = { body: body({ input_tokens: 30, output_tokens: 5, input_tokens_details: { cached_tokens: 10 } }) };
    await gw.post('/v1/responses', req);
    expect(row()).toMatchObject({ usageKnown: true, input: 20, output: 5, cacheRead: 10 });
  });
});
