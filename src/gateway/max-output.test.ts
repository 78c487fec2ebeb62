/**
 * Per-model maximum output (issue 3; data/prices.json `maxOutput`, max-output.ts): a request
 * whose output limit is past its model's maximum reserves at most that maximum and goes upstream
 * with that maximum as its limit (the upstream cannot write past the reservation), and an OpenAI
 * request without any output limit reserves the documented default (32,000), or the model's
 * maximum when that is lower — and sends that limit upstream —, never 0. Real
 * HTTP, fake upstreams; the worst case each call reserves is read off the store.
 * Worst case (worst-case.ts): ⌈body bytes / 3⌉ input tokens at the highest input-side rate
 * plus the output tokens at the output rate, rounded up to whole µ$ (a rate of P USD/MTok is
 * P µ$ per token).
 */
import { describe, expect, it } from 'vitest';
import { outputBound } from './max-output.js';
import { loadPriceTable, priceFor } from './prices.js';
import { forFile, startGateway, type GatewayStart } from './test-server.js';
import { RecordingStore } from './test-stores.js';
import { replyByWireFormat } from './test-upstream.js';

/** The set-up of both gateways: `claude-*` to anthropic, `gpt-*` and `o*` to `provider`, any other model to openai-compatible. */
const setUp = (provider: 'openai' | 'openai-compatible', o: GatewayStart<RecordingStore>): GatewayStart<RecordingStore> => ({
  ...o,
  job: { token: 'flj_maxoutput_0123456789abcdefghij', id: 3, budgetMicros: 1_000_000_000 },
  openai: provider,
  config: {
    modelProviders: [
      { pattern: 'claude-*', provider: 'anthropic' },
      { pattern: 'gpt-*', provider },
      { pattern: 'o*', provider },
      { pattern: '*', provider: 'openai-compatible' },
    ],
  },
});
const gw = forFile(() =>
  startGateway(
    setUp('openai', {
      upstream: replyByWireFormat,
      store: new RecordingStore(),
    }),
  ),
);
// the same store and upstream behind a gateway whose OpenAI provider is openai-compatible
const compat = forFile(() => startGateway(setUp('openai-compatible', { upstream: gw.up, store: gw.store })));

/** Sends `body` to `path` and returns the body's byte count (what the worst case counts). */
async function call(path: string, body: object, via = gw): Promise<number> {
  const text = JSON.stringify(body);
  const res = await via.post(path, text);
  expect(res.status, await res.clone().text()).toBe(200);
  await res.arrayBuffer();
  return Buffer.byteLength(text);
}
const msgs = [{ role: 'user', content: 'hello' }];
/** ⌈(inTokens × inRate + outTokens × outRate) µ$⌉ with rates in USD/MTok, computed in 10⁻⁶ µ$ (exact for these rates). */
const worst = (bytes: number, inRate: number, outTokens: number, outRate: number) => Math.ceil((Math.ceil(bytes / 3) * Math.round(inRate * 1e6) + outTokens * Math.round(outRate * 1e6)) / 1e6);

describe('a limit past the model\'s maximum output reserves that maximum', () => {
  it('Anthropic: claude-3-5-sonnet (max output 8,192) with max_tokens 100,000 reserves 8,192 output tokens, not 100,000', async () => {
    const bytes = await call('/v1/messages', { model: 'claude-3-5-sonnet-20241022', max_tokens: 100_000, messages: msgs });
    // input at the 1-hour cache-write rate $6 (the highest input-side rate), output 8,192 × $15/MTok = 122,880 µ$
    expect(gw.store.held).toEqual([{ micros: worst(bytes, 6, 8_192, 15), call: expect.objectContaining({ outputTokens: 8_192 }) }]);
    expect(gw.store.held[0]!.micros).toBe(Math.ceil(bytes / 3) * 6 + 122_880);
    // the upstream gets the bound reserved for, so it cannot write (and bill) past what is held
    expect(JSON.parse(gw.up.seen[0]!.body)).toMatchObject({ max_tokens: 8_192 });
  });

  it('the lowered limit is the only byte changed: an int64 seed, key order and spacing go upstream as sent', async () => {
    const text = '{"model": "claude-3-5-sonnet-20241022", "max_tokens": 100000, "seed": 9007199254740993, "messages": [{"role":"user","content":"hello"}]}';
    const res = await gw.post('/v1/messages', text);
    expect(res.status, await res.clone().text()).toBe(200);
    await res.arrayBuffer();
    expect(gw.up.seen[0]!.body).toBe(text.replace('100000', '8192'));
  });

  it('a limit past the maximum given twice cannot be lowered faithfully: 400 naming it, nothing upstream, nothing held', async () => {
    const res = await gw.post('/v1/messages', '{"model":"claude-3-5-sonnet-20241022","max_tokens":100000,"max_tokens":100000,"messages":[{"role":"user","content":"hi"}]}');
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ type: 'error', error: { type: 'invalid_request_error', message: 'max_tokens: given twice in the request body; give each field once' } });
    expect(gw.up.seen).toEqual([]);
    expect(gw.store.held).toEqual([]);
  });

  it('a limit within the maximum goes upstream as sent', async () => {
    await call('/v1/messages', { model: 'claude-3-5-sonnet-20241022', max_tokens: 8_192, messages: msgs });
    await call('/v1/chat/completions', { model: 'gpt-4o', max_tokens: 16_384, messages: msgs });
    expect(gw.up.seen.map((r) => JSON.parse(r.body) as object)).toEqual([expect.objectContaining({ max_tokens: 8_192 }), expect.objectContaining({ max_tokens: 16_384 })]);
  });

  it('Anthropic: a limit within the maximum is reserved as asked (claude-sonnet-4-5, max 64,000: 4,000)', async () => {
    const bytes = await call('/v1/messages', { model: 'claude-sonnet-4-5', max_tokens: 4_000, messages: msgs });
    // 4,000 × $15/MTok = 60,000 µ$
    expect(gw.store.held.map((h) => h.micros)).toEqual([Math.ceil(bytes / 3) * 6 + 60_000]);
  });

  it('OpenAI Responses: gpt-5 (max output 128,000) with max_output_tokens 500,000 reserves 128,000', async () => {
    const bytes = await call('/v1/responses', { model: 'gpt-5', max_output_tokens: 500_000, input: 'hello' });
    // input $1.25/MTok, output 128,000 × $10/MTok = 1,280,000 µ$
    expect(gw.store.held).toEqual([{ micros: worst(bytes, 1.25, 128_000, 10), call: expect.objectContaining({ outputTokens: 128_000 }) }]);
    expect(JSON.parse(gw.up.seen[0]!.body)).toMatchObject({ max_output_tokens: 128_000 });
  });

  it('OpenAI Chat: the field the client used is the one lowered (max_tokens 50,000 for gpt-4o goes as max_tokens 16,384)', async () => {
    await call('/v1/chat/completions', { model: 'gpt-4o', max_tokens: 50_000, max_completion_tokens: null, messages: msgs });
    expect(JSON.parse(gw.up.seen[0]!.body)).toEqual({ model: 'gpt-4o', max_tokens: 16_384, max_completion_tokens: null, messages: msgs });
  });

  it('OpenAI Chat: gpt-4o (max output 16,384) with max_completion_tokens 50,000 and n 2 reserves 2 × 16,384', async () => {
    const bytes = await call('/v1/chat/completions', { model: 'gpt-4o', max_completion_tokens: 50_000, n: 2, messages: msgs });
    // 32,768 × $10/MTok = 327,680 µ$
    expect(gw.store.held).toEqual([{ micros: worst(bytes, 2.5, 32_768, 10), call: expect.objectContaining({ outputTokens: 32_768 }) }]);
    expect(JSON.parse(gw.up.seen[0]!.body)).toMatchObject({ max_completion_tokens: 16_384, n: 2 });
  });
});

describe('an OpenAI request without an output limit reserves the default, at most the model\'s maximum (never 0)', () => {
  it('Chat, gpt-4o (max 16,384, under the default): reserves 16,384 output tokens and sends max_completion_tokens 16,384 upstream, not 32,000 (which OpenAI refuses)', async () => {
    const bytes = await call('/v1/chat/completions', { model: 'gpt-4o', messages: msgs });
    // input ⌈bytes/3⌉ × $2.50/MTok, output 16,384 × $10/MTok = 163,840 µ$
    expect(gw.store.held).toEqual([{ micros: worst(bytes, 2.5, 16_384, 10), call: expect.objectContaining({ outputTokens: 16_384 }) }]);
    expect(JSON.parse(gw.up.seen[0]!.body)).toMatchObject({ max_completion_tokens: 16_384 });
  });

  it('Responses, o3 (max output 100,000, over the default): reserves the default 32,000 and sends max_output_tokens 32,000', async () => {
    const bytes = await call('/v1/responses', { model: 'o3', input: 'hello' });
    // 32,000 × $8/MTok = 256,000 µ$
    expect(gw.store.held.map((h) => h.micros)).toEqual([worst(bytes, 2, 32_000, 8)]);
    expect(JSON.parse(gw.up.seen[0]!.body)).toMatchObject({ max_output_tokens: 32_000 });
  });

  it('a model the table has no maximum for (an OpenAI-compatible server\'s qwen3-coder, default prices): the documented default of 32,000', async () => {
    const bytes = await call('/v1/chat/completions', { model: 'qwen3-coder', messages: msgs }, compat);
    // default entry: input-side rate $30 (1-hour cache write), output 32,000 × $75/MTok = 2,400,000 µ$
    expect(gw.store.held).toEqual([{ micros: worst(bytes, 30, 32_000, 75), call: expect.objectContaining({ outputTokens: 32_000 }) }]);
    expect(JSON.parse(gw.up.seen[0]!.body)).toMatchObject({ max_tokens: 32_000 });
  });
});

describe('outputBound and the shipped table', () => {
  const table = loadPriceTable();
  it.each([
    ['claude-opus-4-6', 128_000],
    ['claude-sonnet-4-5-20250929', 64_000],
    ['claude-opus-4-1-20250805', 32_000],
    ['claude-3-7-sonnet-20250219', 128_000], // 64,000, or 128,000 with the output-128k beta
    ['claude-3-haiku-20240307', 4_096],
    ['gpt-5-codex', 128_000],
    ['gpt-5-pro', 272_000],
    ['gpt-4.1-mini', 32_768],
    ['gpt-4o-mini', 16_384],
    ['o4-mini', 100_000],
  ])('%s: maximum output %d tokens', (model, max) => {
    expect(priceFor(table, model).maxOutput).toBe(max);
    expect(outputBound(undefined, priceFor(table, model))).toBe(Math.min(max, 32_000));
    expect(outputBound(max + 1, priceFor(table, model))).toBe(max);
    expect(outputBound(max - 1, priceFor(table, model))).toBe(max - 1);
  });

  it('an unknown model (default entry) keeps the request\'s limit, else 32,000', () => {
    expect(priceFor(table, 'some-new-model').maxOutput).toBeUndefined();
    expect(outputBound(900_000, priceFor(table, 'some-new-model'))).toBe(900_000);
    expect(outputBound(undefined, priceFor(table, 'some-new-model'))).toBe(32_000);
  });
});
