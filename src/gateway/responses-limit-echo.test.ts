/**
 * OpenAI Responses echoes `max_output_tokens` in its response object; when the gateway set the
 * limit itself (the client sent none, or one past the model's maximum output), the client gets
 * its own back (responses-limit-echo.ts), every other byte as the upstream sent it; the call is
 * metered as before. Real HTTP through the node:http adapter, a fake OpenAI-compatible upstream.
 * Prices (µ$ per token): gpt-x 2 in / 10 out, maximum output 1,000 tokens.
 */
import { describe, expect, it } from 'vitest';
import type { PriceTable } from './prices.js';
import { price, sse, SSE_HEADERS } from './test-metering.js';
import { forFile, startGateway } from './test-server.js';

const PRICES: PriceTable = { version: 't', models: { 'gpt-x': { ...price(2, 10, 2, 2, 1), maxOutput: 1000 } }, default: price(2, 10, 2, 2, 1) };
const gw = forFile(() => startGateway({ job: { token: 'flj_limit_echo_0123456789abcdefghi', id: 5, budgetMicros: 100_000_000 }, openai: 'openai-compatible', config: { prices: PRICES } }));

/** The upstream's response object, echoing the limit it was sent (`limit`), as OpenAI's does. */
const response = (limit: number | null, status = 'completed') =>
  `{"id":"resp_1","object":"response","status":"${status}","max_output_tokens":${limit},"model":"gpt-x","output":[{"type":"message","id":"msg_1","role":"assistant","content":[{"type":"output_text","text":"ok \\"max_output_tokens\\": 7"}]}],"usage":{"input_tokens":100,"output_tokens":20,"total_tokens":120},"seed":9007199254740993}`;

async function call(body: object, reply: string | string[], stream = false) {
  gw.setReply(stream ? { headers: SSE_HEADERS, body: reply } : { headers: { 'content-type': 'application/json' }, body: reply });
  const before = gw.store.calls.length;
  const res = await gw.post('/v1/responses', body);
  const text = await res.text();
  return { status: res.status, text, sent: JSON.parse(gw.up.seen.at(-1)!.body) as { max_output_tokens?: unknown }, row: gw.store.calls[before]! };
}

describe('the max_output_tokens a Responses reply echoes', () => {
  it('not streamed: none sent → the upstream gets 1,000, the client reads null back; every other byte is the upstream\'s; metered as before', async () => {
    const r = await call({ model: 'gpt-x', input: 'hi' }, response(1000));
    expect(r.sent.max_output_tokens).toBe(1000);
    expect(r.text).toBe(response(null));
    // 100 × 2 + 20 × 10
    expect(r.row).toMatchObject({ inputTokens: 100, outputTokens: 20, costMicros: 400, usageKnown: true });
    const asNull = await call({ model: 'gpt-x', input: 'hi', max_output_tokens: null }, response(1000));
    expect(asNull.text).toBe(response(null));
  });

  it('one past the model\'s maximum output: the upstream gets the maximum, the client reads its own 50,000 back; one within it is not touched', async () => {
    const past = await call({ model: 'gpt-x', input: 'hi', max_output_tokens: 50_000 }, response(1000));
    expect(past.sent.max_output_tokens).toBe(1000);
    expect(past.text).toBe(response(50_000));
    const within = await call({ model: 'gpt-x', input: 'hi', max_output_tokens: 300 }, response(300));
    expect(within.sent.max_output_tokens).toBe(300);
    expect(within.text).toBe(response(300));
  });

  it('streamed: each lifecycle event\'s response echoes null, the deltas pass as sent, events split across chunks too', async () => {
    const created = sse('response.created', { response: JSON.parse(response(1000, 'in_progress')) });
    const delta = sse('response.output_text.delta', { item_id: 'msg_1', delta: 'ok "max_output_tokens": 7' });
    const completed = sse('response.completed', { response: JSON.parse(response(1000)) });
    // the completed event cut in the middle of its echoed member
    const cut = completed.indexOf('"max_output_tokens"') + 5;
    const r = await call({ model: 'gpt-x', input: 'hi', stream: true }, [created, delta, completed.slice(0, cut), completed.slice(cut)], true);
    expect(r.sent.max_output_tokens).toBe(1000);
    const want = [created, delta, completed].map((e) => e.replace('"max_output_tokens":1000', '"max_output_tokens":null')).join('');
    expect(r.text).toBe(want);
    expect(r.text).toContain('ok \\"max_output_tokens\\": 7'); // text that only names the member is left alone
    expect(r.row).toMatchObject({ inputTokens: 100, outputTokens: 20, costMicros: 400, usageKnown: true, streamed: true });
  });

  it('an error reply passes unchanged', async () => {
    gw.setReply({ status: 400, headers: { 'content-type': 'application/json' }, body: '{"error":{"message":"bad","type":"invalid_request_error","param":null,"code":null}}' });
    const res = await gw.post('/v1/responses', { model: 'gpt-x', input: 'hi' });
    expect([res.status, await res.text()]).toEqual([400, '{"error":{"message":"bad","type":"invalid_request_error","param":null,"code":null}}']);
  });
});
