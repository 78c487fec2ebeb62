/**
 * H3: a streamed call's usage is known only when the stream gave all of it — Anthropic:
 * message_start carried usage AND a message_delta carried the final output figure (then
 * message_stop); OpenAI: the usage chunk (Chat) or response.completed's usage (Responses).
 * Otherwise it is charged the estimate (usage.ts estimateUsage: input as reported, else
 * ⌈request bytes / 4⌉, output the larger of the reported and ⌈streamed text
 * bytes / 4⌉ up to the limit), marked estimated: never $0, never 1 output token for a
 * streamed text. Real HTTP through the gateway to a fake upstream. Prices (test-metering.ts):
 * claude-cheap 3 µ$ input, 15 output; gpt-cheap 2 and 10.
 */
import { beforeEach, describe, expect, it } from 'vitest';
import { chatChunk, meteringGateway, sse, SSE_HEADERS } from './test-metering.js';
import { forFile } from './test-server.js';

const gw = forFile(() => meteringGateway(61));
beforeEach(() => gw.budget(1_000_000));

const row = () => {
  expect(gw.store.calls).toHaveLength(1);
  const c = gw.store.calls[0]!;
  return { usageKnown: c.usageKnown, input: c.inputTokens, output: c.outputTokens, cost: c.costMicros };
};
/** 40 bytes of streamed text: an estimate of 10 output tokens. */
const TEXT = 'forty bytes of text, streamed in 2 parts';
const REQ = JSON.stringify({ model: 'claude-cheap', max_tokens: 100, stream: true, messages: [{ role: 'user', content: 'write forty bytes' }] });
const byBytes = (s: string) => Math.ceil(Buffer.byteLength(s) / 4);
const start = (usage?: object) => sse('message_start', { message: { id: 'm', type: 'message', role: 'assistant', model: 'claude-cheap', content: [], ...(usage ? { usage } : {}) } });
const text = [
  sse('content_block_start', { index: 0, content_block: { type: 'text', text: '' } }),
  sse('content_block_delta', { index: 0, delta: { type: 'text_delta', text: TEXT.slice(0, 20) } }),
  sse('content_block_delta', { index: 0, delta: { type: 'text_delta', text: TEXT.slice(20) } }),
  sse('content_block_stop', { index: 0 }),
];

describe('Anthropic streams', () => {
  it('message_start without usage and no message_delta: the estimate, not $0', async () => {
    expect(Buffer.byteLength(TEXT)).toBe(40);
    gw.setReply({ headers: SSE_HEADERS, body: [start(), ...text, sse('message_stop', {})] });
    await gw.post('/v1/messages', REQ);
    const input = byBytes(REQ);
    expect(row()).toEqual({ usageKnown: false, input, output: 10, cost: input * 3 + 10 * 15 });
    expect(gw.spent()).toBe(input * 3 + 150);
  });

  it('message_start with usage but no message_delta: output estimated from the text (10), not the 1 message_start said', async () => {
    gw.setReply({ headers: SSE_HEADERS, body: [start({ input_tokens: 2_000, output_tokens: 1 }), ...text, sse('message_stop', {})] });
    await gw.post('/v1/messages', REQ);
    // input: the reported 2,000 (more than the request's bytes / 4)
    expect(row()).toEqual({ usageKnown: false, input: 2_000, output: 10, cost: 2_000 * 3 + 10 * 15 });
  });

  it('message_start without usage, then a message_delta with figures: still an estimate (input never reported at the start)', async () => {
    gw.setReply({ headers: SSE_HEADERS, body: [start(), ...text, sse('message_delta', { delta: { stop_reason: 'end_turn' }, usage: { output_tokens: 12 } }), sse('message_stop', {})] });
    await gw.post('/v1/messages', REQ);
    const input = byBytes(REQ);
    expect(row()).toEqual({ usageKnown: false, input, output: 12, cost: input * 3 + 12 * 15 });
  });

  it('message_start usage and message_delta output: known, charged as given', async () => {
    gw.setReply({ headers: SSE_HEADERS, body: [start({ input_tokens: 2_000, output_tokens: 1 }), ...text, sse('message_delta', { delta: { stop_reason: 'end_turn' }, usage: { output_tokens: 12 } }), sse('message_stop', {})] });
    await gw.post('/v1/messages', REQ);
    expect(row()).toEqual({ usageKnown: true, input: 2_000, output: 12, cost: 2_000 * 3 + 12 * 15 });
  });
});

describe('OpenAI streams that end without usage', () => {
  it('Chat Completions: no usage chunk (an upstream ignoring include_usage) → the estimate', async () => {
    const req = JSON.stringify({ model: 'gpt-cheap', max_tokens: 100, stream: true, messages: [{ role: 'user', content: 'write forty bytes' }] });
    gw.setReply({
      headers: SSE_HEADERS,
      body: [chatChunk('gpt-cheap', { choices: [{ index: 0, delta: { content: TEXT.slice(0, 20) } }] }), chatChunk('gpt-cheap', { choices: [{ index: 0, delta: { content: TEXT.slice(20) }, finish_reason: 'stop' }] }), 'data: [DONE]\n\n'],
    });
    await gw.post('/v1/chat/completions', req);
    // input ⌈the client's request bytes / 4⌉ × 2 µ$, output 10 × 10 µ$
    const input = byBytes(req);
    expect(row()).toEqual({ usageKnown: false, input, output: 10, cost: input * 2 + 100 });
  });

  it('Responses: response.completed without usage → the estimate', async () => {
    const req = JSON.stringify({ model: 'gpt-cheap', max_output_tokens: 100, stream: true, input: 'write forty bytes' });
    gw.setReply({
      headers: SSE_HEADERS,
      body: [
        sse('response.created', { response: { id: 'r', model: 'gpt-cheap', status: 'in_progress' } }),
        sse('response.output_text.delta', { delta: TEXT }),
        sse('response.completed', { response: { id: 'r', model: 'gpt-cheap', status: 'completed' } }),
      ],
    });
    await gw.post('/v1/responses', req);
    const input = byBytes(req);
    expect(row()).toEqual({ usageKnown: false, input, output: 10, cost: input * 2 + 100 });
  });
});
