/**
 * What an upstream can do wrong, through the gateway's node:http path and a real fake upstream:
 * a reply without usage and a huge body, a gzip bomb, a NUL in the reply's model name, an
 * upstream that is down. Prices: claude-sonnet-4-5, 3 µ$ per input token, 15 µ$ per output token.
 */
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { forFile, startGateway } from './test-server.js';
import { deadUpstream, firstMessage } from './test-upstream.js';
import { MAX_REPLY_BYTES } from './upstream-http.js';

const TOKEN = 'flj_faults_0123456789abcdefghijkl';
// 1 MB of gzip that unpacks past the reply limit.
const BOMB = gzipSync(Buffer.alloc(MAX_REPLY_BYTES + 1024, 0x20));

const live = forFile(() =>
  startGateway({
    upstream: (req) => {
      const what = firstMessage(req);
      if (what === 'no-usage') return { body: ' '.repeat(2_000_000) }; // 2 MB, no usage: ~500,000 "tokens" by size
      if (what === 'bomb') return { headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' }, body: BOMB };
      return { body: JSON.stringify({ id: 'm', type: 'message', role: 'assistant', model: 'claude-sonnet-4-5\u0000', content: [], stop_reason: 'end_turn', usage: { input_tokens: 10, output_tokens: 2 } }) };
    },
    job: { token: TOKEN, id: 4, budgetMicros: 5_000_000 },
  }),
);
// over the same store (so for the same job): its upstreams (every provider) down
const dead = forFile(async () => startGateway({ upstream: await deadUpstream(), store: live.store, openai: 'openai', config: { retry: { retries: 1, baseMs: 1 } } }));

const call = (path: string, body: string, via = live) => via.post(path, body, { token: TOKEN });
const messages = (content: string, maxTokens = 20) => JSON.stringify({ model: 'claude-sonnet-4-5', max_tokens: maxTokens, messages: [{ role: 'user', content }] });

describe('gateway: upstream faults', () => {
  it('a reply without usage is charged an estimate whose output stops at max_tokens, not one token per 4 bytes of body', async () => {
    const body = messages('no-usage');
    const res = await call('/v1/messages', body);
    expect(res.status).toBe(200);
    await res.arrayBuffer();
    const c = live.store.calls.at(-1)!;
    const inputTokens = Math.ceil(Buffer.byteLength(body) / 4);
    expect(c).toMatchObject({ usageKnown: false, inputTokens, outputTokens: 20, costMicros: inputTokens * 3 + 20 * 15 });
  });

  it('a 200 gzip body that unpacks past the limit is a 502 naming the limit, not retried by anyone, charged at the worst case (the provider billed it)', async () => {
    const before = live.store.calls.length;
    const body = messages('bomb');
    const res = await call('/v1/messages', body);
    expect(res.status).toBe(502);
    expect(res.headers.get('x-should-retry')).toBe('false');
    const err = (await res.json()) as { type: string; error: { type: string; message: string } };
    expect(err).toMatchObject({ type: 'error', error: { type: 'api_error' } });
    expect(err.error.message).toContain(`${MAX_REPLY_BYTES}-byte limit`);
    // input ⌈bytes/4⌉ at 3 µ$, output at max_tokens (20) at 15 µ$
    const input = Math.ceil(Buffer.byteLength(body) / 4);
    expect(live.store.calls.slice(before)).toEqual([expect.objectContaining({ httpStatus: 502, usageKnown: false, inputTokens: input, outputTokens: 20, costMicros: input * 3 + 20 * 15 })]);
  });

  it("a NUL in the reply's model name never reaches the ledger (PostgreSQL cannot store NUL): the row names the requested model", async () => {
    const res = await call('/v1/messages', messages('nul-model'));
    expect(res.status).toBe(200);
    await res.arrayBuffer();
    expect(live.store.calls.at(-1)).toMatchObject({ model: 'claude-sonnet-4-5', inputTokens: 10, outputTokens: 2, usageKnown: true, costMicros: 10 * 3 + 2 * 15 });
  });

  it('a NUL in the request\'s model, or a max_tokens that is not an integer ≥ 1, is a 400 naming the field; the upstream sees nothing', async () => {
    const before = live.up.seen.length;
    const nul = await call('/v1/messages', JSON.stringify({ model: 'claude-sonnet-4-5\u0000', max_tokens: 5, messages: [{ role: 'user', content: 'x' }] }));
    expect(nul.status).toBe(400);
    expect(((await nul.json()) as { error: { message: string } }).error.message).toBe('model: must not contain NUL');
    for (const m of ['1e300', '-1000000000000', '2.5', '0']) {
      const r = await call('/v1/messages', `{"model":"claude-sonnet-4-5","max_tokens":${m},"messages":[{"role":"user","content":"x"}]}`);
      expect(r.status, m).toBe(400);
      expect(((await r.json()) as { error: { message: string } }).error.message).toMatch(/^max_tokens: /);
    }
    const chat = await call('/v1/chat/completions', JSON.stringify({ model: 'gpt-4o\u0000', messages: [{ role: 'user', content: 'x' }] }));
    expect(chat.status).toBe(400);
    // whitespace at an end: no model a provider serves (it was priced as another, by prefix)
    const spaced = await call('/v1/messages', JSON.stringify({ model: 'claude-sonnet-4-5 ', max_tokens: 5, messages: [{ role: 'user', content: 'x' }] }));
    expect([spaced.status, ((await spaced.json()) as { error: { message: string } }).error.message]).toEqual([400, 'model: must not begin or end with whitespace']);
    for (const path of ['/v1/chat/completions', '/v1/responses']) {
      const r = await call(path, JSON.stringify({ model: 'gpt-4o\t', input: 'x', messages: [{ role: 'user', content: 'x' }] }));
      expect([r.status, ((await r.json()) as { error: { message: string } }).error.message], path).toEqual([400, 'model: must not contain control characters']);
    }
    expect(live.up.seen.length).toBe(before);
  });

  it('an upstream that is down: after the retries, a 502 with x-should-retry: false on every wire format', async () => {
    const a = await call('/v1/messages', messages('x'), dead);
    expect(a.status).toBe(502);
    expect(a.headers.get('x-should-retry')).toBe('false');
    const o = await call('/v1/chat/completions', JSON.stringify({ model: 'gpt-4o', messages: [{ role: 'user', content: 'x' }] }), dead);
    expect(o.status, await o.clone().text()).toBe(502);
    expect(o.headers.get('x-should-retry')).toBe('false');
    expect(((await o.json()) as { error: { type: string } }).error.type).toBe('server_error');
  });
});
