import { z } from 'zod';
import type { ModelPrice } from '../core/pricing.js';
import { MAX_OUTPUT_TOKENS_CEILING } from './request.js';

/**
 * The shape of one model's entry in the gateway's price table, as data/prices.json and
 * flotilla.yaml's `gateway.prices` write it (the API's overrides: protocol/model-routes.ts).
 * Token rates are USD per million tokens (a rate of P is P µ$ per token).
 */

/**
 * Rates that replace the base ones for a whole call whose input side (input + cache write +
 * cache read tokens) is above `aboveInputTokens` (Anthropic's long-context pricing: Claude
 * Sonnet 4 / 4.5 past 200,000 input tokens, input $6, output $22.50, cache write $7.50 (5 min)
 * / $12 (1 h), cache read $0.60 per million, instead of 3 / 15 / 3.75 / 6 / 0.30). Every token
 * of such a call, output included, is priced at these rates; web searches keep their price.
 */
export interface LongContextPrice {
  /** The threshold, tokens: a call whose input side is MORE than this takes these rates. */
  aboveInputTokens: number;
  input: number;
  output: number;
  cacheWrite5m: number;
  cacheWrite1h: number;
  cacheRead: number;
}

/**
 * One model's entry: its {@link ModelPrice} (token rates, `webSearch` USD per 1,000 searches),
 * plus what the gateway knows of the model beyond its rates:
 * - `maxOutput`: the most output tokens one call can produce (the provider's documented maximum
 *   output, with any beta that raises it), tokens. A call reserves at most this much output
 *   (max-output.ts), and a request without an output limit reserves this.
 * - `longContext`: the rates of a call past an input-size threshold ({@link LongContextPrice}).
 */
export interface TablePrice extends ModelPrice {
  maxOutput?: number;
  longContext?: LongContextPrice;
}

const rate = () => z.number().nonnegative();

/** zod schema of {@link LongContextPrice}: a whole, positive threshold and non-negative rates; no other keys. */
export const LongContextPriceSchema = z
  .object({
    aboveInputTokens: z.number().int().positive(),
    input: rate(),
    output: rate(),
    cacheWrite5m: rate(),
    cacheWrite1h: rate(),
    cacheRead: rate(),
  })
  .strict();

/**
 * zod schema of {@link TablePrice} (unknown keys dropped; `.strict()` it to refuse them).
 * `maxOutput` is a whole number from 1 to request.ts MAX_OUTPUT_TOKENS_CEILING.
 */
export const TablePriceSchema = z.object({
  input: rate(),
  output: rate(),
  cacheWrite5m: rate(),
  cacheWrite1h: rate(),
  cacheRead: rate(),
  /** USD per 1,000 server-side web search requests (H4). */
  webSearch: rate().optional(),
  maxOutput: z.number().int().min(1).max(MAX_OUTPUT_TOKENS_CEILING).optional(),
  longContext: LongContextPriceSchema.optional(),
});
