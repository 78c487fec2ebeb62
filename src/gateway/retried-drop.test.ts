/**
 * A call whose first upstream attempt the provider may have billed (its connection closed after
 * the whole request was sent, before a reply) and whose retry then got nothing billable — a
 * refused connection, a 503 — is charged an estimate, as a call whose every attempt was dropped
 * is: never $0 for a call that may cost (fresh-tester finding: drop, then ECONNREFUSED, was
 * recorded $0, usage known). A retry that is served is charged what it reports.
 * Gateway over node:http, memory store, 2 retries 1 ms apart, a raw TCP upstream.
 */
import { describe, expect, it } from 'vitest';
import { startGateway } from './test-server.js';
import { rawUpstream } from './test-upstream.js';

const TOKEN = 'flj_retried_drop_0123456789abcdef';
const MESSAGES = { model: 'claude-sonnet-4-5', max_tokens: 100, messages: [{ role: 'user', content: 'the request the provider read' }] };
/** The estimate of meter.ts recordUnreachable: ⌈request bytes / 4⌉ input, 1 output, at $3 / $15 per million (µ$ 3 and 15 a token). */
const INPUT = Math.ceil(Buffer.byteLength(JSON.stringify(MESSAGES)) / 4);
const ESTIMATE = 3 * INPUT + 15;
const RETRY = { retry: { retries: 2, baseMs: 1, maxDelayMs: 10 } };

describe('a retried call whose first attempt was dropped after the request was sent', () => {
  it('then a refused connection: 502 saying it was charged, charged the estimate', async () => {
    const up = await rawUpstream((socket) => {
      socket.destroy();
      void up.close(); // nothing listens from now on: the retries are refused
    });
    const gw = await startGateway({ upstream: up, job: { token: TOKEN, id: 7, budgetMicros: 5_000_000 }, config: RETRY });
    try {
      const res = await gw.post('/v1/messages', MESSAGES);
      expect(res.status).toBe(502);
      const { error } = (await res.json()) as { error: { message: string } };
      expect(error.message).toMatch(/^the model provider \(anthropic\) could not be reached: connect ECONNREFUSED .+; an earlier attempt closed after the request was sent, before a reply, so the call was charged an estimate$/);
      expect(up.count()).toBe(1);
      await expect.poll(() => gw.store.calls.length).toBe(1);
      expect(gw.store.calls[0]).toMatchObject({ httpStatus: 0, usageKnown: false, inputTokens: INPUT, outputTokens: 1, costMicros: ESTIMATE });
    } finally {
      await gw.close();
    }
  });

  it('then 503s: the 503 reaches the client, the call charged the estimate', async () => {
    const up = await rawUpstream((socket) => {
      if (up.count() === 1) return void socket.destroy();
      const body = JSON.stringify({ type: 'error', error: { type: 'api_error', message: 'unavailable' } });
      socket.write(`HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n${body}`);
    });
    const gw = await startGateway({ upstream: up, job: { token: TOKEN, id: 7, budgetMicros: 5_000_000 }, config: RETRY });
    try {
      const res = await gw.post('/v1/messages', MESSAGES);
      expect([res.status, res.headers.get('x-should-retry')]).toEqual([503, 'false']);
      expect(up.count()).toBe(3);
      await expect.poll(() => gw.store.calls.length).toBe(1);
      expect(gw.store.calls[0]).toMatchObject({ httpStatus: 503, usageKnown: false, inputTokens: INPUT, outputTokens: 1, costMicros: ESTIMATE });
    } finally {
      await gw.close();
      await up.close();
    }
  });

  it('then served: charged what the reply reports (10 in, 5 out: 30 + 75 µ$)', async () => {
    const up = await rawUpstream((socket) => {
      if (up.count() === 1) return void socket.destroy();
      const body = JSON.stringify({ id: 'msg_1', type: 'message', role: 'assistant', model: 'claude-sonnet-4-5', content: [{ type: 'text', text: 'ok' }], usage: { input_tokens: 10, output_tokens: 5 } });
      socket.write(`HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n${body}`);
    });
    const gw = await startGateway({ upstream: up, job: { token: TOKEN, id: 7, budgetMicros: 5_000_000 }, config: RETRY });
    try {
      const res = await gw.post('/v1/messages', MESSAGES);
      expect(res.status).toBe(200);
      expect(up.count()).toBe(2);
      await expect.poll(() => gw.store.calls.length).toBe(1);
      expect(gw.store.calls[0]).toMatchObject({ httpStatus: 200, usageKnown: true, inputTokens: 10, outputTokens: 5, costMicros: 105 });
    } finally {
      await gw.close();
      await up.close();
    }
  });
});
