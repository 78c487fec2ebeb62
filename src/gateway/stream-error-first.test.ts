/**
 * A 200 stream whose only event is an error, before the message began (Anthropic documents
 * `overloaded_error` sent so after a 200; a Responses `error` before `response.created`): nothing
 * was served, so the call is recorded as an error is, no tokens, $0 (fresh-tester finding: it was
 * charged an estimate from the request's size). An error after the message began is still
 * charged what it used so far, an estimate marked as one (never $0). Gateway over node:http,
 * memory store, no retries.
 */
import { describe, expect, it } from 'vitest';
import { startGateway } from './test-server.js';

const TOKEN = 'flj_errfirst_0123456789abcdefghij';
const SSE = { 'content-type': 'text/event-stream' };
const MESSAGES = { model: 'claude-sonnet-4-5', max_tokens: 100, stream: true, messages: [{ role: 'user', content: 'x' }] };
const OVERLOADED = 'event: error\ndata: {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}\n\n';
const START = 'event: message_start\ndata: {"type":"message_start","message":{"id":"m","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[],"usage":{"input_tokens":40,"output_tokens":1}}}\n\n';

describe('a 200 stream that is only an error event', () => {
  it('Messages: passed on as sent, recorded with no tokens and $0; after message_start, charged an estimate', async () => {
    const gw = await startGateway({ openai: 'openai', job: { token: TOKEN, id: 4, budgetMicros: 5_000_000 } });
    try {
      gw.setReply({ status: 200, headers: SSE, body: OVERLOADED });
      const res = await gw.post('/v1/messages', MESSAGES);
      expect([res.status, await res.text()]).toEqual([200, OVERLOADED]);
      await expect.poll(() => gw.store.calls.length).toBe(1);
      expect(gw.store.calls[0]).toMatchObject({ httpStatus: 200, inputTokens: 0, outputTokens: 0, usageKnown: true, costMicros: 0 });

      // the message began: input 40 reported, output at least 1 → 40 × 3 + 1 × 15 µ$ (claude-sonnet-4-5: $3 / $15)
      gw.setReply({ status: 200, headers: SSE, body: START + OVERLOADED });
      await (await gw.post('/v1/messages', MESSAGES)).text();
      await expect.poll(() => gw.store.calls.length).toBe(2);
      expect(gw.store.calls[1]).toMatchObject({ inputTokens: 40, outputTokens: 1, usageKnown: false, costMicros: 40 * 3 + 15 });

      // Responses: an error event before response.created
      const failed = 'event: error\ndata: {"type":"error","code":"server_error","message":"The server had an error","sequence_number":0}\n\n';
      gw.setReply({ status: 200, headers: SSE, body: failed });
      await (await gw.post('/v1/responses', { model: 'gpt-4o', input: 'x', stream: true })).text();
      await expect.poll(() => gw.store.calls.length).toBe(3);
      expect(gw.store.calls[2]).toMatchObject({ api: 'openai-responses', httpStatus: 200, inputTokens: 0, outputTokens: 0, usageKnown: true, costMicros: 0 });
    } finally {
      await gw.close();
    }
  });
});
