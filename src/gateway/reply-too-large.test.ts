/**
 * An upstream 2xx reply over the whole-reply size limit (lowered here to 4 KiB): the provider did
 * the work and billed it, so the gateway makes exactly one upstream call (no retry), answers 502
 * naming the limit in the wire format, and charges the call at its worst-case estimate (input by
 * size, output at max_tokens, marked estimated). Through the node:http path and a fake upstream.
 * Prices: claude-sonnet-4-5 and gpt-4o from the shipped table (3/15 and 2.5/10 USD per MTok).
 */
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { forFile, startGateway } from './test-server.js';
import { firstMessage } from './test-upstream.js';
import { setMaxReplyBytes } from './upstream-http.js';

const LIMIT = 4096;
beforeAll(() => setMaxReplyBytes(LIMIT));
afterAll(() => setMaxReplyBytes());
const gw = forFile(() =>
  startGateway({
    upstream: (req) => {
      const what = firstMessage(req);
      const big = JSON.stringify({ id: 'm', type: 'message', role: 'assistant', model: 'claude-sonnet-4-5', content: [{ type: 'text', text: 'x'.repeat(LIMIT * 2) }], stop_reason: 'end_turn', usage: { input_tokens: 10, output_tokens: 2 } });
      // gzip: small on the wire, over the limit once decoded
      if (what === 'gzip') return { headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' }, body: gzipSync(big) };
      return { status: what === 'error' ? 500 : 200, body: big };
    },
    job: { token: 'flj_toolarge_0123456789abcdefghij', id: 7, budgetMicros: 5_000_000 },
    openai: 'openai',
    config: { retry: { retries: 2, baseMs: 1 } },
  }),
);

describe('a 2xx reply over the size limit', () => {
  for (const what of ['plain', 'gzip']) {
    it(`/v1/messages (${what}): one upstream call, 502 api_error naming the limit, charged at the worst case`, async () => {
      const before = { up: gw.up.seen.length, calls: gw.store.calls.length, spent: gw.store.budgets.get(7)?.spent ?? 0 };
      const body = JSON.stringify({ model: 'claude-sonnet-4-5', max_tokens: 300, messages: [{ role: 'user', content: what }] });
      const res = await gw.post('/v1/messages', body);
      expect(res.status).toBe(502);
      expect(res.headers.get('x-should-retry')).toBe('false');
      const err = (await res.json()) as { type: string; error: { type: string; message: string } };
      expect(err).toMatchObject({ type: 'error', error: { type: 'api_error' } });
      expect(err.error.message).toContain(`${LIMIT}-byte limit`);
      expect(gw.up.seen.length - before.up).toBe(1);
      // input ⌈bytes/4⌉ at 3 µ$, output = max_tokens 300 at 15 µ$
      const input = Math.ceil(Buffer.byteLength(body) / 4);
      const cost = input * 3 + 300 * 15;
      expect(gw.store.calls.slice(before.calls)).toEqual([expect.objectContaining({ httpStatus: 502, usageKnown: false, inputTokens: input, outputTokens: 300, costMicros: cost })]);
      expect(gw.store.budgets.get(7)).toMatchObject({ spent: before.spent + cost, reserved: 0 });
    });
  }

  it('/v1/chat/completions: one upstream call, 502 server_error naming the limit, charged at the worst case', async () => {
    const before = { up: gw.up.seen.length, calls: gw.store.calls.length };
    const body = JSON.stringify({ model: 'gpt-4o', max_completion_tokens: 200, messages: [{ role: 'user', content: 'chat' }] });
    const res = await gw.post('/v1/chat/completions', body);
    expect(res.status).toBe(502);
    expect(res.headers.get('x-should-retry')).toBe('false');
    const err = (await res.json()) as { error: { type: string; message: string } };
    expect(err.error.type).toBe('server_error');
    expect(err.error.message).toContain(`${LIMIT}-byte limit`);
    expect(gw.up.seen.length - before.up).toBe(1);
    // gpt-4o: 2.5 µ$ per input token, 10 per output token; input ⌈bytes/4⌉, output 200
    const input = Math.ceil(Buffer.byteLength(body) / 4);
    expect(gw.store.calls.slice(before.calls)).toEqual([expect.objectContaining({ httpStatus: 502, usageKnown: false, inputTokens: input, outputTokens: 200, costMicros: Math.ceil(input * 2.5 + 200 * 10) })]);
  });

  it('an error reply (500) over the limit is not billed: retried as any 500, then recorded with no tokens', async () => {
    const before = { up: gw.up.seen.length, calls: gw.store.calls.length };
    const res = await gw.post('/v1/messages', JSON.stringify({ model: 'claude-sonnet-4-5', max_tokens: 300, messages: [{ role: 'user', content: 'error' }] }));
    expect(res.status).toBe(502);
    await res.arrayBuffer();
    expect(gw.up.seen.length - before.up).toBe(3);
    expect(gw.store.calls.slice(before.calls)).toEqual([expect.objectContaining({ httpStatus: 0, costMicros: 0 })]);
  });
});
