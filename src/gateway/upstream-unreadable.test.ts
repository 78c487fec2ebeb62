/**
 * A reply the gateway's HTTP client cannot read, and a connection that ends after the request was
 * sent (fresh-user findings): both were taken for an unreachable upstream — retried (3 upstream
 * calls, each a reply a real provider bills) and recorded at $0 with usage known. Now a reply
 * that began (a head over undici's limit, a control character in a header, a stray 100 Continue)
 * is not retried and is charged an estimate, marked as one; a connection that ends after the whole
 * request was written, before any reply, is retried, and when the last attempt ends so, charged
 * an estimate. A raw TCP upstream (node:http cannot send such replies); gateway over node:http,
 * memory store; 2 retries with a 1 ms backoff.
 */
import { describe, expect, it } from 'vitest';
import { startGateway } from './test-server.js';
import { rawUpstream, type FakeUpstream } from './test-upstream.js';

const TOKEN = 'flj_unreadable_0123456789abcdefgh';
const OK_BODY = JSON.stringify({ id: 'm', type: 'message', role: 'assistant', model: 'claude-sonnet-4-5', content: [{ type: 'text', text: 'hi' }], usage: { input_tokens: 10, output_tokens: 2 } });

const ok = (extraHead: string) => `HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(OK_BODY)}\r\n${extraHead}\r\n${OK_BODY}`;
const REQUEST = { model: 'claude-sonnet-4-5', max_tokens: 100, messages: [{ role: 'user', content: 'x' }] };
// the estimate (usage.ts estimateUsage): input ⌈request bytes / 4⌉ tokens, output 1 (no body read)
const INPUT = Math.ceil(Buffer.byteLength(JSON.stringify(REQUEST)) / 4);
const ESTIMATE = INPUT * 3 + 1 * 15;

async function callThrough(up: FakeUpstream) {
  const gw = await startGateway({ upstream: up, job: { token: TOKEN, id: 4, budgetMicros: 5_000_000 }, config: { retry: { retries: 2, baseMs: 1, maxDelayMs: 5 } } });
  try {
    const res = await gw.post('/v1/messages', REQUEST);
    const body = (await res.json()) as { error?: { message: string } };
    await expect.poll(() => gw.store.calls.length, { timeout: 2_000 }).toBe(1);
    return { status: res.status, retry: res.headers.get('x-should-retry'), message: body.error?.message ?? '', call: gw.store.calls[0]! };
  } finally {
    await gw.close();
  }
}

describe('a reply that began but cannot be read', () => {
  it.each([
    ['a head over undici\'s limit (a 20 KB header)', ok(`x-big: ${'a'.repeat(20_000)}\r\n`), /could not be read: .*Headers Overflow/i],
    ['a control character in a header value', ok('x-odd: a\u0001b\r\n'), /could not be read: /],
    ['a 100 Continue before the 200', `HTTP/1.1 100 Continue\r\n\r\n${ok('')}`, /could not be read: bad response/],
  ])('%s: one upstream call, a 502 not to retry, charged an estimate, never zero', async (_what, reply, message) => {
    const up = await rawUpstream((s) => s.write(Buffer.from(reply, 'latin1')));
    try {
      const r = await callThrough(up);
      expect(up.count()).toBe(1);
      expect([r.status, r.retry]).toEqual([502, 'false']);
      expect(r.message).toMatch(message);
      expect(r.message).toMatch(/charged an estimate and not retried$/);
      expect(r.call).toMatchObject({ usageKnown: false, inputTokens: INPUT, outputTokens: 1, costMicros: ESTIMATE });
    } finally {
      await up.close();
    }
  });
});

describe('a connection that ends after the request was sent, before any reply', () => {
  it('is retried (3 upstream calls); the last one ending so is charged an estimate (not $0)', async () => {
    const up = await rawUpstream((s) => s.destroy());
    try {
      const r = await callThrough(up);
      expect(up.count()).toBe(3);
      expect([r.status, r.retry]).toEqual([502, 'false']);
      expect(r.message).toMatch(/^the model provider closed the connection after the request was sent, before replying \(.+\); the call was charged an estimate$/);
      expect(r.call).toMatchObject({ httpStatus: 0, usageKnown: false, inputTokens: INPUT, outputTokens: 1, costMicros: ESTIMATE });
    } finally {
      await up.close();
    }
  });

  it('a retry that is answered is charged what it used, once', async () => {
    let n = 0;
    const up = await rawUpstream((s) => (n++ === 0 ? s.destroy() : s.write(ok(''))));
    try {
      const r = await callThrough(up);
      expect(up.count()).toBe(2);
      expect(r.status).toBe(200);
      expect(r.call).toMatchObject({ httpStatus: 200, usageKnown: true, inputTokens: 10, outputTokens: 2, costMicros: 10 * 3 + 2 * 15 });
    } finally {
      await up.close();
    }
  });
});
