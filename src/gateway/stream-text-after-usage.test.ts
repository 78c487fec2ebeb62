/**
 * A stream whose upstream reports its final usage and then writes on (text after Anthropic's
 * message_delta output figure, after a Chat Completions usage chunk, after Responses'
 * response.completed): the client gets every event, and the call's usage is unknown — the
 * figures left the text after them out —, charged an estimate from the text that passed, at
 * most the request's output limit (fresh-tester finding: 40,000 characters after a report of 5
 * output tokens were charged 5, the usage marked known). A server that sends usage in every
 * chunk (each covering its own text) stays known. Gateway over node:http, memory store.
 */
import { describe, expect, it } from 'vitest';
import { startGateway } from './test-server.js';

const TOKEN = 'flj_textafter_0123456789abcdefghij';
const SSE = { 'content-type': 'text/event-stream' };
const BIG = 'x'.repeat(40_000); // ⌈40,000 / 4⌉ = 10,000 tokens: past the limit of 1,000
const sse = (event: string, data: object) => `event: ${event}\ndata: ${JSON.stringify({ type: event, ...data })}\n\n`;
const chunk = (o: object) => `data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', model: 'gpt-4o', ...o })}\n\n`;

describe('text after a stream\'s final usage', () => {
  it('every wire format: passed on, charged the request\'s output limit as an estimate; usage in every chunk stays known', async () => {
    const gw = await startGateway({ openai: 'openai', job: { token: TOKEN, id: 4, budgetMicros: 50_000_000 } });
    try {
      const last = async () => {
        await expect.poll(() => gw.store.calls.length).toBeGreaterThan(0);
        return gw.store.calls.at(-1)!;
      };
      // Messages, claude-sonnet-4-5 ($3 / $15): input 10 as message_start said, output the limit 1,000
      gw.setReply({
        status: 200,
        headers: SSE,
        body:
          sse('message_start', { message: { id: 'm', type: 'message', role: 'assistant', model: 'claude-sonnet-4-5', content: [], usage: { input_tokens: 10, output_tokens: 1 } } }) +
          sse('message_delta', { delta: { stop_reason: 'end_turn' }, usage: { output_tokens: 5 } }) +
          sse('content_block_delta', { index: 0, delta: { type: 'text_delta', text: BIG } }) +
          sse('message_stop', {}),
      });
      const m = await gw.post('/v1/messages', { model: 'claude-sonnet-4-5', max_tokens: 1000, stream: true, messages: [{ role: 'user', content: 'x' }] });
      expect((await m.text()).includes(BIG)).toBe(true);
      expect(await last()).toMatchObject({ inputTokens: 10, outputTokens: 1000, usageKnown: false, costMicros: 10 * 3 + 1000 * 15 });

      // Chat Completions, gpt-4o ($2.50 / $10): input 5 as the usage chunk said, output the limit
      gw.setReply({ status: 200, headers: SSE, body: chunk({ choices: [{ index: 0, delta: { content: 'hi' } }] }) + chunk({ choices: [], usage: { prompt_tokens: 5, completion_tokens: 5 } }) + chunk({ choices: [{ index: 0, delta: { content: BIG } }] }) + 'data: [DONE]\n\n' });
      await (await gw.post('/v1/chat/completions', { model: 'gpt-4o', max_tokens: 1000, stream: true, messages: [{ role: 'user', content: 'x' }] })).text();
      expect(await last()).toMatchObject({ api: 'openai-chat', inputTokens: 5, outputTokens: 1000, usageKnown: false, costMicros: Math.ceil(5 * 2.5 + 1000 * 10) });

      // Responses: after response.completed
      gw.setReply({
        status: 200,
        headers: SSE,
        body:
          sse('response.created', { response: { id: 'r', model: 'gpt-4o', status: 'in_progress' } }) +
          sse('response.completed', { response: { id: 'r', model: 'gpt-4o', status: 'completed', output: [], usage: { input_tokens: 5, output_tokens: 5, total_tokens: 10 } } }) +
          sse('response.output_text.delta', { delta: BIG }),
      });
      await (await gw.post('/v1/responses', { model: 'gpt-4o', max_output_tokens: 1000, stream: true, input: 'x' })).text();
      expect(await last()).toMatchObject({ api: 'openai-responses', inputTokens: 5, outputTokens: 1000, usageKnown: false });

      // usage in every chunk, each covering its own text: known, as reported
      gw.setReply({ status: 200, headers: SSE, body: chunk({ choices: [{ index: 0, delta: { content: 'abcd' } }], usage: { prompt_tokens: 5, completion_tokens: 1 } }) + chunk({ choices: [{ index: 0, delta: { content: 'efgh' } }], usage: { prompt_tokens: 5, completion_tokens: 2 } }) + 'data: [DONE]\n\n' });
      await (await gw.post('/v1/chat/completions', { model: 'gpt-4o', max_tokens: 1000, stream: true, messages: [{ role: 'user', content: 'x' }] })).text();
      expect(await last()).toMatchObject({ inputTokens: 5, outputTokens: 2, usageKnown: true });
    } finally {
      await gw.close();
    }
  });
});
