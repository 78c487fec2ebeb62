import type { ModelPrice } from '../core/pricing.js';
import type { TablePrice } from './price-schema.js';

/**
 * Long-context pricing (price-schema.ts LongContextPrice). Anthropic prices a Claude Sonnet 4 /
 * 4.5 call whose input side — input + cache write + cache read tokens, output not counted — is
 * more than 200,000 tokens at higher rates for ALL its tokens, output included (input $6,
 * output $22.50, cache write $7.50 / $12, cache read $0.60 per million, instead of 3 / 15 /
 * 3.75 / 6 / 0.30); a call of exactly 200,000 input-side tokens is priced at the base rates.
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
