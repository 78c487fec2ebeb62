import { z } from 'zod';
import type { ModelPrice } from '../core/pricing.js';
import { LongContextPrice as LongContextPriceShape, MaxOutputTokens, UsdRate } from '../protocol/index.js';

/**
 * The shape of one model's entry in the gateway's price table, as data/prices.json and
 * flotilla.yaml's `gateway.prices` write it (the API's overrides: protocol/model-routes.ts).
 * Token rates are USD per million tokens (a rate of P is P µ$ per token).
 */

/**
 * Rates that replace the base ones for a whole call whose input side (input + cache write +
 * cache read tokens) is above `aboveInputTokens` (the providers' long-context pricing, e.g.
 * Claude Sonnet 4 / 4.5 past 200,000 input tokens: input $6, output $22.50, cache write $7.50
 * (5 min) / $12 (1 h), cache read $0.60 per million, instead of 3 / 15 / 3.75 / 6 / 0.30; the
 * models and thresholds are in data/prices.json). Every token
 * of such a call, output included, is priced at these rates; web searches keep their price.
 * `aboveInputTokens` is the threshold, tokens: a call whose input side is MORE than this takes
 * these rates. The shape is protocol/model-routes.ts LongContextPrice, so the API's price
 * overrides validate it as this table does.
 */
export type LongContextPrice = LongContextPriceShape;

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

/**
 * USD per million tokens (or per 1,000 searches): 0 to 1,000,000 with at most 6 decimals, the
 * API's own schema (protocol model-routes.ts UsdRate, which says why), as the CLI takes them too.
 */
const rate = () => UsdRate;

/** zod schema of {@link LongContextPrice}: a whole, positive threshold and rates from 0 to 1,000,000; no other keys (protocol's LongContextPrice). */
export const LongContextPriceSchema = LongContextPriceShape;

/**
 * zod schema of {@link TablePrice} (unknown keys dropped; `.strict()` it to refuse them).
 * Every rate is a protocol UsdRate (0 to 1,000,000, at most 6 decimals): the same rule as the
 * API's price overrides (protocol ModelPrice), so data/prices.json, flotilla.yaml and `PUT
 * /api/gateway/prices` agree on which rates exist.
 * `maxOutput` is a whole number from 1 to MAX_OUTPUT_TOKENS_CEILING (protocol MaxOutputTokens).
 */
export const TablePriceSchema = z.object({
  input: rate(),
  output: rate(),
  cacheWrite5m: rate(),
  cacheWrite1h: rate(),
  cacheRead: rate(),
  /** USD per 1,000 server-side web search requests (H4). */
  webSearch: rate().optional(),
  maxOutput: MaxOutputTokens.optional(),
  longContext: LongContextPriceSchema.optional(),
});
