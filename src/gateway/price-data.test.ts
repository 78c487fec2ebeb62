/**
 * The shipped price table (data/prices.json) against the providers' own pages, read 2026-12-02:
 * each expectation below is a figure from the page named beside it, through the public lookup
 * (prices.ts priceFor), so a dated or unlisted variant resolves as a real call's model name does.
 * Rates are USD per million tokens, i.e. µ$ per token; costs below are worked out by hand.
 */
import { describe, expect, it } from 'vitest';
import { callCost } from '../core/pricing.js';
import { ratesFor } from './long-context.js';
import { loadPriceTable, priceFor } from './prices.js';

const table = loadPriceTable();

describe('price table: figures from the providers’ pages (2026-12-02)', () => {
  it('is the 2026-12-06 edition (2026-12-02 and three OpenAI models added)', () => {
    expect(table.version).toBe('2026-12-06');
  });

  it('OpenAI models a cheaper model\'s name prefixes are listed at their own prices (read 2026-12-06)', () => {
    // https://community.openai.com/t/1299919 (deep research in the API: o3 $10 / $40, o4-mini $2 / $8) and the models' pages
    // (cached input $2.50 / $0.50, 100K max output); gpt-4o-2024-05-13: $5 / $15, no cached-input rate, 4,096 max output
    expect(priceFor(table, 'o3-deep-research')).toEqual({ input: 10, output: 40, cacheWrite5m: 10, cacheWrite1h: 10, cacheRead: 2.5, webSearch: 10, maxOutput: 100_000 });
    expect(priceFor(table, 'o4-mini-deep-research')).toEqual({ input: 2, output: 8, cacheWrite5m: 2, cacheWrite1h: 2, cacheRead: 0.5, webSearch: 10, maxOutput: 100_000 });
    expect(priceFor(table, 'gpt-4o-2024-05-13')).toEqual({ input: 5, output: 15, cacheWrite5m: 5, cacheWrite1h: 5, cacheRead: 5, webSearch: 25, maxOutput: 4096 });
  });

  it('Anthropic models added in 2026', () => {
    // https://platform.claude.com/docs/en/models/sonnet-5-5/overview (2 / 10 / 2.50 / 4, 128K max output)
    // + https://platform.claude.com/docs/en/release-notes/overview (2026-10-07: cache reads $0.20 → $0.10)
    expect(priceFor(table, 'claude-sonnet-5-5')).toEqual({ input: 2, output: 10, cacheWrite5m: 2.5, cacheWrite1h: 4, cacheRead: 0.1, webSearch: 10, maxOutput: 128_000 });
    // https://platform.claude.com/docs/en/models/opus-5-5/overview (4 / 20 / 5 / 8 / 0.20, 128K)
    expect(priceFor(table, 'claude-opus-5-5')).toEqual({ input: 4, output: 20, cacheWrite5m: 5, cacheWrite1h: 8, cacheRead: 0.2, webSearch: 10, maxOutput: 128_000 });
    // https://platform.claude.com/docs/en/models/opus-5/overview (5 / 25 / 6.25 / 10 / 0.50, 128K)
    expect(priceFor(table, 'claude-opus-5')).toEqual({ input: 5, output: 25, cacheWrite5m: 6.25, cacheWrite1h: 10, cacheRead: 0.5, webSearch: 10, maxOutput: 128_000 });
    // https://platform.claude.com/docs/en/about-claude/pricing (Opus 4.7 / 4.8 rows), https://platform.claude.com/docs/en/models/opus-4-8/overview
    // (128K max output); Opus 4.7's 128K: https://docs.cloud.google.com/gemini-enterprise-agent-platform/models/partner-models/claude/opus-4-7
    for (const id of ['claude-opus-4-7', 'claude-opus-4-8']) {
      expect(priceFor(table, id)).toEqual({ input: 5, output: 25, cacheWrite5m: 6.25, cacheWrite1h: 10, cacheRead: 0.5, webSearch: 10, maxOutput: 128_000 });
    }
    // https://platform.claude.com/docs/en/about-claude/pricing (Fable 5.1 row: cache hits $0.25, 0.025x input)
    // + https://platform.claude.com/docs/en/release-notes/overview (2026-09-01)
    expect(priceFor(table, 'claude-fable-5-1')).toEqual({ input: 10, output: 50, cacheWrite5m: 12.5, cacheWrite1h: 20, cacheRead: 0.25, webSearch: 10, maxOutput: 128_000 });
    // https://platform.claude.com/docs/en/release-notes/overview (2026-11-09: Fable 5.2 $8 / $40) and
    // https://platform.claude.com/docs/en/models/overview (Fable 5.2 column); cache rates 1.25x / 2x / 0.025x input
    expect([priceFor(table, 'claude-fable-5-2').input, priceFor(table, 'claude-fable-5-2').output]).toEqual([8, 40]);
    // https://platform.claude.com/docs/en/models/haiku-5-5/overview (prompts up to / over 100,000 tokens)
    expect(priceFor(table, 'claude-haiku-5-5')).toEqual({
      input: 0.1,
      output: 0.5,
      cacheWrite5m: 0.125,
      cacheWrite1h: 0.2,
      cacheRead: 0.01,
      webSearch: 10,
      maxOutput: 128_000,
      longContext: { aboveInputTokens: 100_000, input: 0.5, output: 2.5, cacheWrite5m: 0.625, cacheWrite1h: 1, cacheRead: 0.05 },
    });
  });

  it('Claude Opus 4.6 / Sonnet 4.6 and later bill the 1M window flat (no long-context block)', () => {
    // https://platform.claude.com/docs/en/models/opus-4-6/overview, .../sonnet-4-6/overview (1M context, one rate, 128K max output)
    for (const id of ['claude-opus-4-6', 'claude-sonnet-4-6', 'claude-opus-4-7', 'claude-opus-4-8', 'claude-opus-5', 'claude-opus-5-5', 'claude-sonnet-5', 'claude-sonnet-5-5', 'claude-fable-5-2']) {
      expect(priceFor(table, id).longContext, id).toBeUndefined();
      expect(priceFor(table, id).maxOutput, id).toBe(128_000);
    }
  });

  it('OpenAI models added in 2026', () => {
    // https://developers.openai.com/api/docs/models/gpt-6.2-sol (2 / cached 0.10 / cache writes 2.50 (30 min) / 10;
    // >272K input: input and cache rates 2x, output 1.5x; 128,000 max output)
    expect(priceFor(table, 'gpt-6.2-sol')).toEqual({
      input: 2,
      output: 10,
      cacheWrite5m: 2.5,
      cacheWrite1h: 2.5,
      cacheRead: 0.1,
      webSearch: 10,
      maxOutput: 128_000,
      longContext: { aboveInputTokens: 272_000, input: 4, output: 15, cacheWrite5m: 5, cacheWrite1h: 5, cacheRead: 0.2 },
    });
    // https://developers.openai.com/api/docs/models/compare (GPT-6 Astra: 10 / cached 1 / cache writes 12.50 / 50, 128,000 max output,
    // Apr 30 2026 knowledge cutoff), https://developers.openai.com/api/docs/models/gpt-6-astra
    expect(priceFor(table, 'gpt-6-astra')).toMatchObject({ input: 10, output: 50, cacheWrite5m: 12.5, cacheRead: 1, maxOutput: 128_000 });
    // https://developers.openai.com/api/docs/models (GPT-6.2 Astra $8 / $40, GPT-6.1 Terra $1 / $5, 128K max output)
    expect(priceFor(table, 'gpt-6.2-astra')).toMatchObject({ input: 8, output: 40, maxOutput: 128_000 });
    expect(priceFor(table, 'gpt-6.1-terra')).toMatchObject({ input: 1, output: 5, maxOutput: 128_000 });
    // https://developers.openai.com/api/docs/models/gpt-5.4-nano (0.20 / cached 0.02 / 1.25, 128,000 max output)
    expect(priceFor(table, 'gpt-5.4-nano')).toEqual({ input: 0.2, output: 1.25, cacheWrite5m: 0.2, cacheWrite1h: 0.2, cacheRead: 0.02, webSearch: 10, maxOutput: 128_000 });
    // https://developers.openai.com/api/docs/models/gpt-5.6-sol (1,050,000 context, 128,000 max output; cache writes 1.25x
    // uncached input; the $4 / $20 promotion is guaranteed only through 2026-11-21, so the $5 / $30 list price is kept);
    // the gpt-5.6 alias routes to GPT-5.6 Sol
    expect(priceFor(table, 'gpt-5.6')).toEqual(priceFor(table, 'gpt-5.6-sol'));
    expect(priceFor(table, 'gpt-5.6-sol')).toMatchObject({ input: 5, output: 30, cacheWrite5m: 6.25, cacheRead: 0.5, maxOutput: 128_000 });
  });

  it('existing entries the pages confirm are unchanged', () => {
    // https://platform.claude.com/docs/en/about-claude/pricing (Opus 4.6, Sonnet 4.6, Haiku 4.5 rows) and the models' overview pages (max output)
    expect(priceFor(table, 'claude-opus-4-6')).toEqual({ input: 5, output: 25, cacheWrite5m: 6.25, cacheWrite1h: 10, cacheRead: 0.5, webSearch: 10, maxOutput: 128_000 });
    expect(priceFor(table, 'claude-sonnet-4-6')).toEqual({ input: 3, output: 15, cacheWrite5m: 3.75, cacheWrite1h: 6, cacheRead: 0.3, webSearch: 10, maxOutput: 128_000 });
    expect(priceFor(table, 'claude-haiku-4-5')).toEqual({ input: 1, output: 5, cacheWrite5m: 1.25, cacheWrite1h: 2, cacheRead: 0.1, webSearch: 10, maxOutput: 64_000 });
    // https://developers.openai.com/api/docs/models/gpt-5-nano (0.05 / cached 0.005 / 0.40, 128,000 max output)
    expect(priceFor(table, 'gpt-5-nano')).toEqual({ input: 0.05, output: 0.4, cacheWrite5m: 0.05, cacheWrite1h: 0.05, cacheRead: 0.005, webSearch: 10, maxOutput: 128_000 });
  });

  it('dated ids from the docs resolve to their entries', () => {
    // https://developers.openai.com/api/reference/resources/$shared (AllModels lists gpt-5.5-2026-04-23, gpt-5.4-mini-2026-03-17)
    expect(priceFor(table, 'gpt-5.5-2026-04-23')).toBe(table.models['gpt-5.5']);
    expect(priceFor(table, 'gpt-5.4-mini-2026-03-17')).toBe(table.models['gpt-5.4-mini']);
    // https://platform.claude.com/docs/en/models/opus-4-5/overview (Model ID claude-opus-4-5-20251101)
    expect(priceFor(table, 'claude-opus-4-5-20251101')).toBe(table.models['claude-opus-4-5']);
    // Claude 4.6 and later models have no dated ids in the docs; a dated form would still resolve (date suffix stripped)
    expect(priceFor(table, 'claude-sonnet-5-5-20260928')).toBe(table.models['claude-sonnet-5-5']);
  });

  it('a -pro model listed on OpenAI’s pages is priced as itself, not as the (cheaper) default', () => {
    // gpt-5.5-pro $30 / $180: no OpenAI page in reach gave it; https://apidog.com/blog/how-to-use-gpt-5-5-api/ and
    // https://docs.apiyi.com/en/models/gpt-5-5-pro agree (third-party, corroboration only). The default entry is $15 / $75.
    expect([priceFor(table, 'gpt-5.5-pro').input, priceFor(table, 'gpt-5.5-pro').output]).toEqual([30, 180]);
    expect(priceFor(table, 'gpt-5.5-pro').input).toBeGreaterThan(table.default.input);
  });

  it('costs worked by hand (µ$)', () => {
    const usage = (inputTokens: number, cacheWriteTokens: number, cacheReadTokens: number, outputTokens: number) => ({ inputTokens, cacheWriteTokens, cacheReadTokens, outputTokens });

    // claude-sonnet-5-5: 1,200 × 2 + 10,000 × 2.50 + 50,000 × 0.10 + 2,000 × 10 = 2,400 + 25,000 + 5,000 + 20,000 = 52,400 µ$
    const sonnet = priceFor(table, 'claude-sonnet-5-5');
    expect(callCost(usage(1_200, 10_000, 50_000, 2_000), ratesFor(sonnet, 61_200)).micros).toBe(52_400);
    // the same with the 10,000 written for 1 hour: 10,000 × 4 = 40,000 instead of 25,000 → 67,400 µ$
    expect(callCost({ ...usage(1_200, 10_000, 50_000, 2_000), cacheWrite1hTokens: 10_000 }, sonnet).micros).toBe(67_400);

    // claude-opus-5-5 with 3 web searches: 1,000 × 4 + 500 × 20 + 3 × $10 / 1,000 = 4,000 + 10,000 + 30,000 = 44,000 µ$
    expect(callCost({ ...usage(1_000, 0, 0, 500), webSearchRequests: 3 }, priceFor(table, 'claude-opus-5-5')).micros).toBe(44_000);

    // claude-haiku-5-5: a prompt of exactly 100,000 tokens is at the base rates: 100,000 × 0.10 + 1,000 × 0.50 = 10,000 + 500 = 10,500 µ$;
    // 100,001 (60,001 input + 40,000 cache read) is over it, every token at the long rates:
    // 60,001 × 0.50 + 40,000 × 0.05 + 1,000 × 2.50 = 30,000.5 + 2,000 + 2,500 = 34,500.5 → 34,501 µ$ (half up), 34,500,500 n$
    const haiku = priceFor(table, 'claude-haiku-5-5');
    expect(callCost(usage(100_000, 0, 0, 1_000), ratesFor(haiku, 100_000)).micros).toBe(10_500);
    const long = callCost(usage(60_001, 0, 40_000, 1_000), ratesFor(haiku, 100_001));
    expect([long.micros, long.nanos]).toEqual([34_501, 34_500_500]);

    // gpt-6.2-sol, a 300,000-token prompt with 100,000 of it cached (over 272,000: input and cache 2x, output 1.5x):
    // 200,000 × 4 + 100,000 × 0.20 + 10,000 × 15 = 800,000 + 20,000 + 150,000 = 970,000 µ$
    expect(callCost(usage(200_000, 0, 100_000, 10_000), ratesFor(priceFor(table, 'gpt-6.2-sol'), 300_000)).micros).toBe(970_000);
  });
});
