import type { ModelPrice } from '../core/pricing.js';
import type { TablePrice } from './price-schema.js';

/**
 * Long-context pricing (price-schema.ts LongContextPrice). Some models are priced at higher
 * rates for ALL the tokens of a call whose input side — input + cache write + cache read
 * tokens, output not counted — is above a threshold (data/prices.json `longContext`): Claude
 * Sonnet 4 / 4.5 above 200,000 (input $6, output $22.50, cache write $7.50 / $12, cache read
 * $0.60 per million, instead of 3 / 15 / 3.75 / 6 / 0.30), Claude Haiku 5.5 above 100,000,
 * OpenAI GPT-5.4 and later above 272,000 (input and cache rates ×2, output ×1.5). A call of
 * exactly the threshold is priced at the base rates.
 */

/**
 * The rates a call of `price`'s model with `inputSideTokens` input-side tokens is priced at:
 * `price` itself when the model has no `longContext` entry or the call is not above its
 * `aboveInputTokens`; else `price` with the long-context token rates (its `webSearch` kept).
 * The merged object is made once per price object, not per call.
 */
export function ratesFor(price: TablePrice, inputSideTokens: number): ModelPrice {
  const lc = price.longContext;
  if (lc === undefined || inputSideTokens <= lc.aboveInputTokens) return price;
  let long = longRates.get(price);
  if (long === undefined) {
    long = { input: lc.input, output: lc.output, cacheWrite5m: lc.cacheWrite5m, cacheWrite1h: lc.cacheWrite1h, cacheRead: lc.cacheRead };
    if (price.webSearch !== undefined) long.webSearch = price.webSearch;
    longRates.set(price, long);
  }
  return long;
}

/** The long-context rates of each price object ({@link ratesFor}). */
const longRates = new WeakMap<TablePrice, ModelPrice>();
