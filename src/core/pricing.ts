import type { TokenUsage } from '../protocol/index.js';

/**
 * Price of one model in USD per million tokens (the unit providers publish). Each token
 * category is priced separately; cache reads and cache writes are not also counted as input.
 * (Anthropic's usage reports `input_tokens` excluding cache reads and writes.)
 */
export interface ModelPrice {
  input: number;
  output: number;
  /** Cache write with the default 5-minute lifetime. */
  cacheWrite5m: number;
  /** Cache write with the 1-hour lifetime. */
  cacheWrite1h: number;
  cacheRead: number;
  /**
   * Server-side web search, USD per 1,000 requests (how Anthropic and OpenAI publish it:
   * Anthropic $10 per 1,000 searches, `usage.server_tool_use.web_search_requests`; OpenAI per
   * 1,000 `web_search_call`s). Charged on top of the tokens. Absent: the price table's default
   * entry's (gateway/prices.ts priceFor), else 0.
   */
  webSearch?: number;
}

/** Scale that turns a USD/MTok price (which may have fractions such as 0.30 or 3.75) into an exact integer. */
const PRICE_SCALE = 1_000_000;

function scaled(pricePerMTok: number): number {
  return Math.round(pricePerMTok * PRICE_SCALE);
}

/** A per-1,000-requests USD price as an exact integer count of 10⁻¹² USD per request (P/1000 USD = P × 10⁹ of them). */
function scaledPerRequest(usdPer1k: number): number {
  return Math.round(usdPer1k * 1_000_000_000);
}

/** One web search request at `price`, in integer micro-dollars rounded up (the reservation's unit: $10 per 1,000 → 10,000 µ$). */
export function webSearchMicros(price: ModelPrice): number {
  return Math.ceil(scaledPerRequest(price.webSearch ?? 0) / PRICE_SCALE);
}

/** Whole µ$ `micros` in callCost's exact unit (10⁻¹² USD). */
function feeScaled(micros: number): bigint {
  if (!Number.isSafeInteger(micros) || micros < 0) throw new RangeError(`toolFeeMicros must be a non-negative whole number of micro-dollars, got ${micros}`);
  return BigInt(micros) * BigInt(PRICE_SCALE);
}

/**
 * Cost of `usage` at `price`, in integer micro-dollars, computed exactly then rounded half up
 * once at the end (at least 1 µ$ when the exact cost is above 0, {@link callCost}). A price of P USD per million tokens is exactly P µ$ per token, so the exact
 * total is Σ tokens × P µ$. Example: {input 3, cacheWrite 12,304, output 550} at 3 / 3.75 / 15
 * → 9 + 46,140 + 8,250 = 54,399 µ$ ($0.054399).
 * Cache writes are priced at the 5-minute rate unless `cacheWrite1hTokens` says how many were 1 h.
 */
export function costMicros(usage: TokenUsage & { cacheWrite1hTokens?: number; webSearchRequests?: number }, price: ModelPrice): number {
  return callCost(usage, price).micros;
}

/**
 * Cost of `usage` at `price`, exact (in units of 10⁻¹² USD, as a bigint) and rounded half up
 * once from that exact figure to integer micro-dollars (`micros`, what budgets and totals use;
 * at least 1 µ$ when the exact cost is above 0: a served call is never free) and to integer
 * nano-dollars (`nanos`, kept beside each call so sub-µ$ costs stay exact).
 * Example (issue 3): {input 4, cacheRead 2,455, output 23} at 3 / 0.30 / 15 → exact
 * 12 + 736.5 + 345 = 1,093.5 µ$ → micros 1,094 (half up), nanos 1,093,500.
 * `webSearchRequests` (server-side web searches, H4) are charged `price.webSearch` USD per
 * 1,000 on top: 3 searches at $10 per 1,000 = 30,000 µ$. `toolFeeMicros` (whole µ$, not by
 * model: per-call fees of other built-in tools, gateway/tool-fees.ts) are added as they are.
 * @throws RangeError when `toolFeeMicros` is not a non-negative safe integer.
 */
export function callCost(usage: TokenUsage & { cacheWrite1hTokens?: number; webSearchRequests?: number; toolFeeMicros?: number }, price: ModelPrice): { micros: number; nanos: number; exact: bigint } {
  const oneHour = Math.min(usage.cacheWrite1hTokens ?? 0, usage.cacheWriteTokens);
  const fiveMin = usage.cacheWriteTokens - oneHour;
  const total =
    BigInt(usage.inputTokens) * BigInt(scaled(price.input)) +
    BigInt(usage.outputTokens) * BigInt(scaled(price.output)) +
    BigInt(fiveMin) * BigInt(scaled(price.cacheWrite5m)) +
    BigInt(oneHour) * BigInt(scaled(price.cacheWrite1h)) +
    BigInt(usage.cacheReadTokens) * BigInt(scaled(price.cacheRead)) +
    (usage.webSearchRequests ? BigInt(usage.webSearchRequests) * BigInt(scaledPerRequest(price.webSearch ?? 0)) : 0n) +
    (usage.toolFeeMicros ? feeScaled(usage.toolFeeMicros) : 0n);
  const scale = BigInt(PRICE_SCALE);
  const nanoScale = scale / 1000n;
  // a call that costs anything is charged at least 1 µ$: half up alone made calls under 0.5 µ$
  // free, and a budget could be spent by enough of them without moving (fresh tester: 25 calls of 0.4 µ$ charged $0)
  const micros = total > 0n && total < scale ? 1 : Number((total + scale / 2n) / scale);
  return { micros, nanos: Number((total + nanoScale / 2n) / nanoScale), exact: total };
}
