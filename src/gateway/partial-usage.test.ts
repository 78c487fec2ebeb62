/**
 * A reply whose usage gives its input figure but no output figure (an OpenAI-compatible server
 * reporting `prompt_tokens` alone; a Messages body with `input_tokens` only): the usage is not
 * known, so the call is charged an estimate, but the estimate takes the provider's own input
 * figure, not ⌈request bytes / 4⌉ (fresh-tester finding: 1,000 reported input tokens charged as
 * 25), and output from the reply's text (usage.ts estimateUsage). Every wire format, streamed
 * and not. Real HTTP gateway, memory store, a fake upstream.
 */
import { describe, expect, it } from 'vitest';
import { forFile, startGateway } from './test-server.js';
import type { FakeReply } from './test-upstream.js';

const sse = (o: object) => `data: ${JSON.stringify(o)}\n\n`;
const event = (type: string, o: object) => `event: ${type}\ndata: ${JSON.stringify({ type, ...o })}\n\n`;
const MESSAGE = JSON.stringify({ id: 'msg_1', type: 'message', role: 'assistant', model: 'claude-sonnet-4-5', content: [{ type: 'text', text: 'hi' }], usage: { input_tokens: 1000 } });
const CHAT = JSON.stringify({ id: 'c', object: 'chat.completion', model: 'gpt-4o', choices: [{ index: 0, message: { role: 'assistant', content: 'hi' } }], usage: { prompt_tokens: 1000 } });
const CHAT_STREAM = [
  sse({ id: 'c', object: 'chat.completion.chunk', choices: [{ index: 0, delta: { content: 'hello' } }] }),
  sse({ id: 'c', object: 'chat.completion.chunk', choices: [], usage: { prompt_tokens: 1000 } }),
  'data: [DONE]\n\n',
];
const RESPONSES_STREAM = [
  event('response.created', { response: { id: 'r', model: 'gpt-4o' } }),
  event('response.output_text.delta', { delta: 'hello world!' }),
  event('response.completed', { response: { id: 'r', model: 'gpt-4o', usage: { input_tokens: 2000 } } }),
];

function answer(path: string, stream: boolean): FakeReply {
  if (path.startsWith('/v1/messages')) return { body: MESSAGE };
  if (path.endsWith('/responses')) return { headers: { 'content-type': 'text/event-stream' }, body: RESPONSES_STREAM };
  return stream ? { headers: { 'content-type': 'text/event-stream' }, body: CHAT_STREAM } : { body: CHAT };
}

const gw = forFile(() =>
  startGateway({
    upstream: (r) => answer(r.url, (JSON.parse(r.body) as { stream?: boolean }).stream === true),
    job: { token: 'flj_partial_usage_0123456789abcdefg', id: 9, budgetMicros: 5_000_000 },
    openai: 'openai-compatible',
  }),
);

describe('usage with an input figure and no output figure', () => {
  it('Messages, not streamed: input 1,000 as reported, output ⌈reply bytes / 4⌉; at $3 / $15 per million', async () => {
    gw.reset();
    const res = await gw.post('/v1/messages', { model: 'claude-sonnet-4-5', max_tokens: 100, messages: [{ role: 'user', content: 'hi' }] });
    expect(res.status).toBe(200);
    await res.text();
    const out = Math.ceil(Buffer.byteLength(MESSAGE) / 4);
    expect(out).toBeLessThan(100);
    await expect.poll(() => gw.store.calls.length).toBe(1);
    expect(gw.store.calls[0]).toMatchObject({ usageKnown: false, inputTokens: 1000, outputTokens: out, costMicros: 3000 + 15 * out });
  });

  it('Chat Completions, not streamed: input 1,000 as reported; at $2.50 / $10 per million (gpt-4o)', async () => {
    gw.reset();
    const res = await gw.post('/v1/chat/completions', { model: 'gpt-4o', max_tokens: 100, messages: [{ role: 'user', content: 'hi' }] });
    expect(res.status).toBe(200);
    await res.text();
    const out = Math.ceil(Buffer.byteLength(CHAT) / 4);
    await expect.poll(() => gw.store.calls.length).toBe(1);
    expect(gw.store.calls[0]).toMatchObject({ usageKnown: false, inputTokens: 1000, outputTokens: out, costMicros: 2500 + 10 * out });
  });

  it('Chat Completions, streamed: input 1,000 as reported, output ⌈5 text bytes / 4⌉ = 2', async () => {
    gw.reset();
    const res = await gw.post('/v1/chat/completions', { model: 'gpt-4o', max_tokens: 100, stream: true, messages: [{ role: 'user', content: 'hi' }] });
    expect(res.status).toBe(200);
    await res.text();
    await expect.poll(() => gw.store.calls.length).toBe(1);
    expect(gw.store.calls[0]).toMatchObject({ usageKnown: false, inputTokens: 1000, outputTokens: 2, costMicros: 2500 + 20 });
  });

  it('Responses, streamed: input 2,000 as reported, output ⌈12 text bytes / 4⌉ = 3', async () => {
    gw.reset();
    const res = await gw.post('/v1/responses', { model: 'gpt-4o', max_output_tokens: 100, stream: true, input: 'hi' });
    expect(res.status).toBe(200);
    await res.text();
    await expect.poll(() => gw.store.calls.length).toBe(1);
    expect(gw.store.calls[0]).toMatchObject({ usageKnown: false, inputTokens: 2000, outputTokens: 3, costMicros: 5000 + 30 });
  });
});
