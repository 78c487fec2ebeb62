/**
 * Long-context pricing (issue 3; data/prices.json `longContext`, long-context.ts): Anthropic
 * prices a Claude Sonnet 4 / 4.5 call whose input side (input + cache write + cache read
 * tokens) is more than 200,000 tokens at input $6, output $22.50, cache write $7.50 (5 min) /
 * $12 (1 h), cache read $0.60 per million — every token of the call, output included —
 * instead of 3 / 15 / 3.75 / 6 / 0.30. Applied to the charge and to the worst case reserved.
 * A rate of P USD/MTok is P µ$ per token; every figure below is worked out by hand.
 * Real HTTP, a fake Anthropic upstream that reports the usage the request names.
 */
import { describe, expect, it } from 'vitest';
import { callCost } from '../core/pricing.js';
import { ratesFor } from './long-context.js';
import { loadPriceTable, priceFor } from './prices.js';
import { forFile, startGateway } from './test-server.js';
import { RecordingStore } from './test-stores.js';
import { worstCaseMicros } from './worst-case.js';

const table = loadPriceTable();
const gw = forFile(() =>
  startGateway({
    // The usage to report travels in the request's `metadata.user_id` (JSON), the padding in its message.
    upstream: (r) => {
      const body = JSON.parse(r.body) as { model: string; metadata: { user_id: string } };
      return { body: JSON.stringify({ id: 'm', type: 'message', role: 'assistant', model: body.model, content: [], stop_reason: 'end_turn', usage: JSON.parse(body.metadata.user_id) as object }) };
    },
    store: new RecordingStore(),
    job: { token: 'flj_longcontext_0123456789abcdefgh', id: 8, budgetMicros: 100_000_000 },
  }),
);
/** What every call reserved, µ$. */
const held = () => gw.store.held.map((h) => h.micros);

/** The request body for `model` reporting `usage`, padded to exactly `bytes` bytes. */
function bodyOf(model: string, usage: object, bytes: number, maxTokens = 1_000): string {
  const make = (pad: number) => JSON.stringify({ model, max_tokens: maxTokens, metadata: { user_id: JSON.stringify(usage) }, messages: [{ role: 'user', content: 'x'.repeat(pad) }] });
  const body = make(bytes - Buffer.byteLength(make(0)));
  expect(Buffer.byteLength(body)).toBe(bytes);
  return body;
}
async function call(body: string) {
  const res = await gw.post('/v1/messages', body);
  expect(res.status, await res.clone().text()).toBe(200);
  await res.arrayBuffer();
  return gw.store.calls.at(-1)!;
}

describe('the charge', () => {
  // 210,000-byte bodies: the usage bound (bytes + 4,096 slack) lets these figures through as reported.
  it('claude-sonnet-4-5, 200,001 input-side tokens: every token at the long-context rates', async () => {
    const usage = { input_tokens: 150_000, cache_read_input_tokens: 40_000, cache_creation_input_tokens: 10_001, output_tokens: 1_000 };
    const row = await call(bodyOf('claude-sonnet-4-5', usage, 210_000));
    // 150,000 × 6 = 900,000; 40,000 × 0.60 = 24,000; 10,001 × 7.50 = 75,007.5; 1,000 × 22.50 = 22,500
    // = 1,021,507.5 µ$ → 1,021,508 (half up), 1,021,507,500 n$
    expect(row).toMatchObject({ usageKnown: true, inputTokens: 150_000, cacheReadTokens: 40_000, cacheWriteTokens: 10_001, outputTokens: 1_000, costMicros: 1_021_508, costNanos: 1_021_507_500 });
  });

  it('exactly 200,000 input-side tokens: the base rates (the threshold is "more than")', async () => {
    const usage = { input_tokens: 150_000, cache_read_input_tokens: 40_000, cache_creation_input_tokens: 10_000, output_tokens: 1_000 };
    const row = await call(bodyOf('claude-sonnet-4-5-20250929', usage, 210_000));
    // 150,000 × 3 = 450,000; 40,000 × 0.30 = 12,000; 10,000 × 3.75 = 37,500; 1,000 × 15 = 15,000 → 514,500 µ$
    expect(row).toMatchObject({ usageKnown: true, costMicros: 514_500 });
  });

  it('claude-sonnet-4 with 1-hour cache writes: 5-minute writes at 7.50, 1-hour ones at 12', async () => {
    const usage = { input_tokens: 100_000, cache_creation_input_tokens: 100_001, cache_creation: { ephemeral_1h_input_tokens: 60_000 }, output_tokens: 2_000 };
    const row = await call(bodyOf('claude-sonnet-4-20250514', usage, 210_000, 2_000));
    // 100,000 × 6 = 600,000; 40,001 × 7.50 = 300,007.5; 60,000 × 12 = 720,000; 2,000 × 22.50 = 45,000
    // = 1,665,007.5 µ$ → 1,665,008
    expect(row).toMatchObject({ usageKnown: true, costMicros: 1_665_008 });
  });

  it('cache writes reported only by lifetime (no cache_creation_input_tokens): charged, under the threshold at base rates (they were charged nothing: fresh tester)', async () => {
    const usage = { input_tokens: 10, cache_creation: { ephemeral_5m_input_tokens: 0, ephemeral_1h_input_tokens: 1_000 }, output_tokens: 10 };
    const row = await call(bodyOf('claude-sonnet-4-5', usage, 2_000, 100));
    // 10 × 3 = 30; 1,000 × 6 (1-hour writes) = 6,000; 10 × 15 = 150 → 6,180 µ$
    expect(row).toMatchObject({ usageKnown: true, cacheWriteTokens: 1_000, costMicros: 6_180 });
  });

  it('a model without long-context rates (claude-opus-4-5) is priced at its base rates past 200,000', async () => {
    const row = await call(bodyOf('claude-opus-4-5', { input_tokens: 200_001, output_tokens: 1_000 }, 210_000));
    // 200,001 × 5 = 1,000,005; 1,000 × 25 = 25,000 → 1,025,005 µ$
    expect(row).toMatchObject({ usageKnown: true, costMicros: 1_025_005 });
  });
});

describe('the worst case reserved', () => {
  it('an input estimate (⌈bytes / 3⌉) past 200,000 tokens reserves at the long-context rates', async () => {
    await call(bodyOf('claude-sonnet-4-5', { input_tokens: 10, output_tokens: 1 }, 600_001));
    // ⌈600,001 / 3⌉ = 200,001 input tokens at the highest long-context input-side rate, the 1-hour
    // write $12: 2,400,012 µ$; 1,000 output × 22.50 = 22,500 µ$ → 2,422,512 µ$
    expect(held()).toEqual([2_422_512]);
  });

  it('an input estimate of exactly 200,000 tokens reserves at the base rates', async () => {
    await call(bodyOf('claude-sonnet-4-5', { input_tokens: 10, output_tokens: 1 }, 600_000));
    // 200,000 × $6 (1-hour write) = 1,200,000 µ$; 1,000 × 15 = 15,000 µ$ → 1,215,000 µ$
    expect(held()).toEqual([1_215_000]);
  });
});

describe('ratesFor and the shipped table', () => {
  it('Sonnet 4 and 4.5 carry the long-context block; other models do not', () => {
    const long = { aboveInputTokens: 200_000, input: 6, output: 22.5, cacheWrite5m: 7.5, cacheWrite1h: 12, cacheRead: 0.6 };
    expect(priceFor(table, 'claude-sonnet-4-5-20250929').longContext).toEqual(long);
    expect(priceFor(table, 'claude-sonnet-4-20250514').longContext).toEqual(long);
    expect(priceFor(table, 'claude-haiku-4-5').longContext).toBeUndefined();
    expect(priceFor(table, 'gpt-5').longContext).toBeUndefined();
  });

  it('ratesFor keeps the web search price; callCost and worstCaseMicros agree with it', () => {
    const p = priceFor(table, 'claude-sonnet-4-5');
    expect(ratesFor(p, 200_000)).toBe(p);
    expect(ratesFor(p, 200_001)).toEqual({ input: 6, output: 22.5, cacheWrite5m: 7.5, cacheWrite1h: 12, cacheRead: 0.6, webSearch: 10 });
    // 2 searches at $10 per 1,000 = 20,000 µ$ on top of 200,001 × 6 = 1,200,006 µ$
    expect(callCost({ inputTokens: 200_001, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0, webSearchRequests: 2 }, ratesFor(p, 200_001)).micros).toBe(1_220_006);
    // ⌈600,001 / 3⌉ = 200,001 × 12 + 10 × 22.5 = 2,400,012 + 225 = 2,400,237 µ$
    expect(worstCaseMicros(600_001, 10, p)).toBe(2_400_237);
  });
});
