/**
 * H1: reported usage is held to what a correct provider can report. Output ≤ the output bound
 * reserved for (the request's limit, or the 32,000 the gateway sets, × `n` choices); input +
 * cache read + cache write ≤ the body's bytes + 4,096 tokens of slack + 6,000 per inline
 * image. A figure past its bound is charged at the bound and the call recorded as estimated.
 * Real HTTP through the gateway to a fake upstream, every wire format, streamed and not.
 * Prices (test-metering.ts): claude-cheap 3 µ$ input, 15 output, 3.75 cache write (5 min),
 * 0.3 cache read per token; gpt-cheap 2 input, 10 output, 1 cached input.
 */
import { describe, expect, it } from 'vitest';
import { chatChunk, meteringGateway, sse, SSE_HEADERS } from './test-metering.js';
import { forFile } from './test-server.js';

const gw = forFile(() => meteringGateway(41));

const row = () => {
  expect(gw.store.calls).toHaveLength(1);
  const c = gw.store.calls[0]!;
  return { usageKnown: c.usageKnown, input: c.inputTokens, output: c.outputTokens, cacheRead: c.cacheReadTokens, cacheWrite: c.cacheWriteTokens, cost: c.costMicros };
};
const bytes = (s: string) => Buffer.byteLength(s);
const anthropicReq = (maxTokens: number, stream = false) => JSON.stringify({ model: 'claude-cheap', max_tokens: maxTokens, stream, messages: [{ role: 'user', content: 'say hi' }] });
const message = (usage: object) => JSON.stringify({ id: 'm', type: 'message', role: 'assistant', model: 'claude-cheap', content: [{ type: 'text', text: 'hi' }], stop_reason: 'end_turn', usage });
const anthropicStream = (start: object, finalOutput: number) => [
  sse('message_start', { message: { id: 'm', type: 'message', role: 'assistant', model: 'claude-cheap', content: [], usage: start } }),
  sse('content_block_start', { index: 0, content_block: { type: 'text', text: '' } }),
  sse('content_block_delta', { index: 0, delta: { type: 'text_delta', text: 'hi' } }),
  sse('message_delta', { delta: { stop_reason: 'max_tokens' }, usage: { output_tokens: finalOutput } }),
  sse('message_stop', {}),
];

describe('output past the output limit is charged at the limit, as an estimate', () => {
  it('Anthropic, not streamed: output_tokens 100,000,000 with max_tokens 10 on a $0.10 tree → 10 output tokens ($1,500 before)', async () => {
    gw.budget(100_000);
    gw.setReply({ body: message({ input_tokens: 5, output_tokens: 100_000_000 }) });
    expect((await gw.post('/v1/messages', anthropicReq(10))).status).toBe(200);
    // 5 × 3 + 10 × 15 µ$
    expect(row()).toEqual({ usageKnown: false, input: 5, output: 10, cacheRead: 0, cacheWrite: 0, cost: 165 });
    expect(gw.spent()).toBe(165);
  });

  it('Anthropic, streamed: message_delta reports 100,000,000 output tokens with max_tokens 10 → 10', async () => {
    gw.budget(100_000);
    gw.setReply({ headers: SSE_HEADERS, body: anthropicStream({ input_tokens: 5, output_tokens: 1 }, 100_000_000) });
    await gw.post('/v1/messages', anthropicReq(10, true));
    expect(row()).toEqual({ usageKnown: false, input: 5, output: 10, cacheRead: 0, cacheWrite: 0, cost: 165 });
    expect(gw.spent()).toBe(165);
  });

  it('Chat Completions, not streamed: completion_tokens 5,000,000 with max_tokens 10 on a $1 tree → 10 ($50 before)', async () => {
    gw.budget(1_000_000);
    gw.setReply({ body: JSON.stringify({ id: 'c', object: 'chat.completion', model: 'gpt-cheap', choices: [{ index: 0, message: { role: 'assistant', content: 'hi' } }], usage: { prompt_tokens: 7, completion_tokens: 5_000_000 } }) });
    await gw.post('/v1/chat/completions', JSON.stringify({ model: 'gpt-cheap', max_tokens: 10, messages: [{ role: 'user', content: 'say hi' }] }));
    // 7 × 2 + 10 × 10 µ$
    expect(row()).toEqual({ usageKnown: false, input: 7, output: 10, cacheRead: 0, cacheWrite: 0, cost: 114 });
    expect(gw.spent()).toBe(114);
  });

  it('Chat Completions, streamed: the usage chunk says 5,000,000 completion tokens with max_completion_tokens 10 → 10', async () => {
    gw.budget(1_000_000);
    gw.setReply({ headers: SSE_HEADERS, body: [chatChunk('gpt-cheap', { choices: [{ index: 0, delta: { content: 'hi' } }] }), chatChunk('gpt-cheap', { choices: [], usage: { prompt_tokens: 7, completion_tokens: 5_000_000 } }), 'data: [DONE]\n\n'] });
    await gw.post('/v1/chat/completions', JSON.stringify({ model: 'gpt-cheap', max_completion_tokens: 10, stream: true, messages: [{ role: 'user', content: 'say hi' }] }));
    expect(row()).toEqual({ usageKnown: false, input: 7, output: 10, cacheRead: 0, cacheWrite: 0, cost: 114 });
  });

  it('Chat Completions with n = 3 choices of max_tokens 10: 30 output tokens are known, 31 are charged as 30', async () => {
    const req = JSON.stringify({ model: 'gpt-cheap', max_tokens: 10, n: 3, messages: [{ role: 'user', content: 'say hi' }] });
    const reply = (completion: number) => ({ body: JSON.stringify({ id: 'c', object: 'chat.completion', model: 'gpt-cheap', choices: [], usage: { prompt_tokens: 7, completion_tokens: completion } }) });
    gw.budget(1_000_000);
    gw.setReply(reply(30));
    await gw.post('/v1/chat/completions', req);
    expect(row()).toEqual({ usageKnown: true, input: 7, output: 30, cacheRead: 0, cacheWrite: 0, cost: 7 * 2 + 30 * 10 });
    gw.store.calls.length = 0;
    gw.setReply(reply(31));
    await gw.post('/v1/chat/completions', req);
    expect(row()).toEqual({ usageKnown: false, input: 7, output: 30, cacheRead: 0, cacheWrite: 0, cost: 7 * 2 + 30 * 10 });
  });

  it('Chat Completions without an output limit: the 32,000 the gateway set is the bound (32,000 known, 32,001 charged as 32,000)', async () => {
    const req = JSON.stringify({ model: 'gpt-cheap', messages: [{ role: 'user', content: 'say hi' }] });
    const reply = (completion: number) => ({ body: JSON.stringify({ id: 'c', object: 'chat.completion', model: 'gpt-cheap', choices: [], usage: { prompt_tokens: 7, completion_tokens: completion } }) });
    gw.budget(1_000_000);
    gw.setReply(reply(32_000));
    await gw.post('/v1/chat/completions', req);
    expect(row()).toMatchObject({ usageKnown: true, output: 32_000, cost: 14 + 320_000 });
    gw.store.calls.length = 0;
    gw.budget(1_000_000);
    gw.setReply(reply(32_001));
    await gw.post('/v1/chat/completions', req);
    expect(row()).toMatchObject({ usageKnown: false, output: 32_000, cost: 14 + 320_000 });
    expect(gw.spent()).toBe(320_014);
  });

  it('Responses, not streamed and streamed: output_tokens 1,000,000 with max_output_tokens 10 → 10', async () => {
    const usage = { input_tokens: 7, output_tokens: 1_000_000 };
    gw.budget(1_000_000);
    gw.setReply({ body: JSON.stringify({ id: 'r', object: 'response', model: 'gpt-cheap', status: 'completed', output: [], usage }) });
    await gw.post('/v1/responses', JSON.stringify({ model: 'gpt-cheap', max_output_tokens: 10, input: 'say hi' }));
    expect(row()).toEqual({ usageKnown: false, input: 7, output: 10, cacheRead: 0, cacheWrite: 0, cost: 114 });
    gw.store.calls.length = 0;
    gw.setReply({
      headers: SSE_HEADERS,
      body: [
        sse('response.created', { response: { id: 'r', model: 'gpt-cheap', status: 'in_progress' } }),
        sse('response.output_text.delta', { delta: 'hi' }),
        sse('response.completed', { response: { id: 'r', model: 'gpt-cheap', status: 'completed', usage } }),
      ],
    });
    await gw.post('/v1/responses', JSON.stringify({ model: 'gpt-cheap', max_output_tokens: 10, stream: true, input: 'say hi' }));
    expect(row()).toEqual({ usageKnown: false, input: 7, output: 10, cacheRead: 0, cacheWrite: 0, cost: 114 });
  });
});

describe('input past the body bytes + 4,096 (+ 6,000 per image) is charged at that bound, as an estimate', () => {
  it('Anthropic, not streamed: 1,000,000 input tokens for a ~100-byte request → bytes + 4,096', async () => {
    const req = anthropicReq(10);
    expect(bytes(req)).toBeLessThan(200);
    gw.budget(100_000);
    gw.setReply({ body: message({ input_tokens: 1_000_000, output_tokens: 2 }) });
    await gw.post('/v1/messages', req);
    const bound = bytes(req) + 4_096;
    expect(row()).toEqual({ usageKnown: false, input: bound, output: 2, cacheRead: 0, cacheWrite: 0, cost: bound * 3 + 2 * 15 });
    expect(gw.spent()).toBe(bound * 3 + 30);
  });

  it('Anthropic, streamed: a message_start with 1,000,000 cache reads and 1,000,000 cache writes → the bound, split as reported (half and half)', async () => {
    const req = anthropicReq(10, true);
    gw.budget(100_000);
    gw.setReply({ headers: SSE_HEADERS, body: anthropicStream({ input_tokens: 0, cache_read_input_tokens: 1_000_000, cache_creation_input_tokens: 1_000_000, output_tokens: 1 }, 3) });
    await gw.post('/v1/messages', req);
    const bound = bytes(req) + 4_096;
    const half = Math.floor(bound / 2);
    // n$: input × 3,000 + reads × 300 + writes × 3,750 + 3 output × 15,000, rounded to µ$ half up
    const input = bound - 2 * half;
    expect(row()).toEqual({ usageKnown: false, input, output: 3, cacheRead: half, cacheWrite: half, cost: Math.round((input * 3_000 + half * 300 + half * 3_750 + 45_000) / 1000) });
  });

  it('a report at the bounds exactly is known and charged as given', async () => {
    const req = anthropicReq(10);
    gw.budget(100_000);
    const bound = bytes(req) + 4_096;
    gw.setReply({ body: message({ input_tokens: bound - 100, cache_read_input_tokens: 100, output_tokens: 10 }) });
    await gw.post('/v1/messages', req);
    // (bound − 100) × 3 + 100 × 0.3 + 10 × 15 µ$
    expect(row()).toEqual({ usageKnown: true, input: bound - 100, output: 10, cacheRead: 100, cacheWrite: 0, cost: (bound - 100) * 3 + 30 + 150 });
  });

  it('Chat Completions: prompt_tokens 1,000,000 (600,000 of them cached) for a small request → the bound, in the reported shares', async () => {
    const req = JSON.stringify({ model: 'gpt-cheap', max_tokens: 10, messages: [{ role: 'user', content: 'say hi' }] });
    gw.budget(1_000_000);
    gw.setReply({ body: JSON.stringify({ id: 'c', object: 'chat.completion', model: 'gpt-cheap', choices: [], usage: { prompt_tokens: 1_000_000, completion_tokens: 2, prompt_tokens_details: { cached_tokens: 600_000 } } }) });
    await gw.post('/v1/chat/completions', req);
    const bound = bytes(req) + 4_096;
    const cached = Math.floor(bound * 0.6);
    expect(row()).toEqual({ usageKnown: false, input: bound - cached, output: 2, cacheRead: cached, cacheWrite: 0, cost: (bound - cached) * 2 + cached * 1 + 2 * 10 });
  });

  it('an inline image adds 6,000 tokens to the bound: bytes + 4,096 + 6,000 is known, one more is charged at it', async () => {
    const image = { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'A'.repeat(20_000) } };
    const req = JSON.stringify({ model: 'claude-cheap', max_tokens: 10, messages: [{ role: 'user', content: [image, { type: 'text', text: 'what is it?' }] }] });
    const bound = bytes(req) + 4_096 + 6_000;
    gw.budget(1_000_000);
    gw.setReply({ body: message({ input_tokens: bound, output_tokens: 2 }) });
    await gw.post('/v1/messages', req);
    expect(row()).toEqual({ usageKnown: true, input: bound, output: 2, cacheRead: 0, cacheWrite: 0, cost: bound * 3 + 30 });
    gw.store.calls.length = 0;
    gw.setReply({ body: message({ input_tokens: bound + 1, output_tokens: 2 }) });
    await gw.post('/v1/messages', req);
    expect(row()).toEqual({ usageKnown: false, input: bound, output: 2, cacheRead: 0, cacheWrite: 0, cost: bound * 3 + 30 });
  });
});
