/**
 * H2: a call is priced by the model the request asked for (the one its route and reservation
 * used), whatever model the upstream's reply names (llama.cpp, Ollama and company gateways
 * name their own), and the ledger row names the requested model (it has one model column).
 * Real HTTP through the gateway to a fake upstream. Prices (test-metering.ts): claude-cheap
 * 3 µ$ input, 15 output; claude-dear 75 and 375; gpt-cheap 2 and 10; gpt-dear 50 and 200.
 */
import { beforeEach, describe, expect, it } from 'vitest';
import { chatChunk, meteringGateway, sse, SSE_HEADERS } from './test-metering.js';
import { forFile } from './test-server.js';

const gw = forFile(() => meteringGateway(51));
// $0.01: the call priced at the reply's model (100 × 75 + 10 × 375 = 11,250 µ$) would overspend it
beforeEach(() => gw.budget(10_000));

const ledger = () => gw.store.calls.map((c) => ({ model: c.model, usageKnown: c.usageKnown, cost: c.costMicros }));

describe('the reply names a dearer model than the request asked for', () => {
  it('Anthropic, not streamed: priced and recorded as the requested claude-cheap', async () => {
    gw.setReply({ body: JSON.stringify({ id: 'm', type: 'message', role: 'assistant', model: 'claude-dear', content: [{ type: 'text', text: 'hi' }], stop_reason: 'end_turn', usage: { input_tokens: 100, output_tokens: 10 } }) });
    await gw.post('/v1/messages', JSON.stringify({ model: 'claude-cheap', max_tokens: 20, messages: [{ role: 'user', content: 'say hi' }] }));
    // 100 × 3 + 10 × 15 µ$
    expect(ledger()).toEqual([{ model: 'claude-cheap', usageKnown: true, cost: 450 }]);
    expect(gw.spent()).toBe(450);
  });

  it('Anthropic, streamed: message_start naming claude-dear changes nothing', async () => {
    gw.setReply({
      headers: SSE_HEADERS,
      body: [
        sse('message_start', { message: { id: 'm', type: 'message', role: 'assistant', model: 'claude-dear', content: [], usage: { input_tokens: 100, output_tokens: 1 } } }),
        sse('content_block_delta', { index: 0, delta: { type: 'text_delta', text: 'hi' } }),
        sse('message_delta', { delta: { stop_reason: 'end_turn' }, usage: { output_tokens: 10 } }),
        sse('message_stop', {}),
      ],
    });
    await gw.post('/v1/messages', JSON.stringify({ model: 'claude-cheap', max_tokens: 20, stream: true, messages: [{ role: 'user', content: 'say hi' }] }));
    expect(ledger()).toEqual([{ model: 'claude-cheap', usageKnown: true, cost: 450 }]);
    expect(gw.spent()).toBe(450);
  });

  it('Chat Completions, not streamed and streamed: priced as the requested gpt-cheap', async () => {
    const usage = { prompt_tokens: 100, completion_tokens: 10 };
    gw.setReply({ body: JSON.stringify({ id: 'c', object: 'chat.completion', model: 'gpt-dear', choices: [{ index: 0, message: { role: 'assistant', content: 'hi' } }], usage }) });
    await gw.post('/v1/chat/completions', JSON.stringify({ model: 'gpt-cheap', max_tokens: 20, messages: [{ role: 'user', content: 'say hi' }] }));
    gw.setReply({ headers: SSE_HEADERS, body: [chatChunk('gpt-dear', { choices: [{ index: 0, delta: { content: 'hi' } }] }), chatChunk('gpt-dear', { choices: [], usage }), 'data: [DONE]\n\n'] });
    await gw.post('/v1/chat/completions', JSON.stringify({ model: 'gpt-cheap', max_tokens: 20, stream: true, messages: [{ role: 'user', content: 'say hi' }] }));
    // 100 × 2 + 10 × 10 µ$ each
    expect(ledger()).toEqual([
      { model: 'gpt-cheap', usageKnown: true, cost: 300 },
      { model: 'gpt-cheap', usageKnown: true, cost: 300 },
    ]);
    expect(gw.spent()).toBe(600);
  });

  it('Responses, streamed: response.completed naming gpt-dear changes nothing', async () => {
    gw.setReply({
      headers: SSE_HEADERS,
      body: [
        sse('response.created', { response: { id: 'r', model: 'gpt-dear', status: 'in_progress' } }),
        sse('response.output_text.delta', { delta: 'hi' }),
        sse('response.completed', { response: { id: 'r', model: 'gpt-dear', status: 'completed', usage: { input_tokens: 100, output_tokens: 10 } } }),
      ],
    });
    await gw.post('/v1/responses', JSON.stringify({ model: 'gpt-cheap', max_output_tokens: 20, stream: true, input: 'say hi' }));
    expect(ledger()).toEqual([{ model: 'gpt-cheap', usageKnown: true, cost: 300 }]);
  });

  it('a reply naming the requested model with a date suffix is priced the same (and recorded by the requested name)', async () => {
    gw.setReply({ body: JSON.stringify({ id: 'm', type: 'message', role: 'assistant', model: 'claude-cheap-20250929', content: [], stop_reason: 'end_turn', usage: { input_tokens: 100, output_tokens: 10 } }) });
    await gw.post('/v1/messages', JSON.stringify({ model: 'claude-cheap', max_tokens: 20, messages: [{ role: 'user', content: 'say hi' }] }));
    expect(ledger()).toEqual([{ model: 'claude-cheap', usageKnown: true, cost: 450 }]);
  });
});
