/**
 * A stream the upstream ends cleanly after its final usage figures but without its last event
 * (Anthropic `message_stop`, OpenAI `data: [DONE]`; some servers leave it out) is metered at
 * those figures as known usage (a fresh tester found such calls counted as estimated); without
 * the final figures, or on a connection cut after them, the usage stays an estimate.
 * Real HTTP gateway, memory store, a fake upstream.
 */
import type { ServerResponse } from 'node:http';
import { describe, expect, it } from 'vitest';
import { forFile, startGateway } from './test-server.js';
import type { FakeAnswer } from './test-upstream.js';

const sse = (o: object) => `data: ${JSON.stringify(o)}\n\n`;
const event = (type: string, o: object) => `event: ${type}\ndata: ${JSON.stringify({ type, ...o })}\n\n`;
const START = event('message_start', { message: { id: 'msg_1', type: 'message', role: 'assistant', model: 'claude-sonnet-4-5', content: [], usage: { input_tokens: 40, output_tokens: 1 } } });
const TEXT = event('content_block_delta', { index: 0, delta: { type: 'text_delta', text: 'hello there' } });
const DELTA = event('message_delta', { delta: { stop_reason: 'end_turn' }, usage: { output_tokens: 30 } });
const SSE = { 'content-type': 'text/event-stream' };

let next: FakeAnswer = { body: '{}' };
const gw = forFile(() => startGateway({ upstream: () => next, job: { token: 'flj_no_terminator_0123456789abcdef', id: 9, budgetMicros: 5_000_000 }, openai: 'openai-compatible' }));

async function call(path: string, body: object) {
  gw.reset();
  const res = await gw.post(path, { ...body, stream: true });
  await res.text().catch(() => '');
  await expect.poll(() => gw.store.calls.length).toBe(1);
  return gw.store.calls[0]!;
}
const messages = { model: 'claude-sonnet-4-5', max_tokens: 100, messages: [{ role: 'user', content: 'hi' }] };
const chat = { model: 'gpt-4o', max_tokens: 100, messages: [{ role: 'user', content: 'hi' }] };

describe('a stream ended cleanly without its last event', () => {
  it('Messages with message_start and message_delta, no message_stop: known, 40 in and 30 out at $3 / $15 per million = 570 µ$', async () => {
    next = { headers: SSE, body: [START, TEXT, DELTA] };
    expect(await call('/v1/messages', messages)).toMatchObject({ usageKnown: true, inputTokens: 40, outputTokens: 30, costMicros: 570 });
  });

  it('Chat Completions with its usage chunk, no [DONE]: known, 100 in and 50 out at $2.50 / $10 per million = 750 µ$', async () => {
    next = { headers: SSE, body: [sse({ id: 'c', object: 'chat.completion.chunk', choices: [{ index: 0, delta: { content: 'hello' } }] }), sse({ id: 'c', object: 'chat.completion.chunk', choices: [], usage: { prompt_tokens: 100, completion_tokens: 50 } })] };
    expect(await call('/v1/chat/completions', chat)).toMatchObject({ usageKnown: true, inputTokens: 100, outputTokens: 50, costMicros: 750 });
  });

  it('Messages without message_delta (no final output figure): an estimate, as before', async () => {
    next = { headers: SSE, body: [START, TEXT] };
    expect(await call('/v1/messages', messages)).toMatchObject({ usageKnown: false, inputTokens: 40 });
  });

  it('a connection cut after message_delta is no clean end: an estimate', async () => {
    next = (res: ServerResponse) => {
      res.writeHead(200, SSE);
      res.write(START + TEXT + DELTA, () => setTimeout(() => res.socket?.destroy(), 20));
    };
    expect(await call('/v1/messages', messages)).toMatchObject({ usageKnown: false });
  });
});
