import type { LongContextPrice, ModelPrice as PriceOverride } from '../protocol/index.js';
import type { TablePrice } from './price-schema.js';
import { priceFor, setModelPrice, tokenPriceFor, type PriceTable } from './prices.js';

export type { PriceOverride };

/**
 * How a price override — flotilla.yaml `gateway.prices` (config-file.ts) or the API's (stored:
 * protocol/model-routes.ts ModelPrice) — combines with the price table entry it replaces (the
 * one {@link tokenPriceFor} finds for the override's name: what the gateway priced that name at
 * without it). Rates are USD per million tokens; `maxOutput` tokens.
 * - Token rates: the override's.
 * - `webSearch` (USD per 1,000 server-side web searches): the override's; absent, the replaced
 *   entry's (claude-sonnet-4-5's $10), and when the table does not list the model or its entry
 *   has none, the table's default entry's (left out here; prices.ts priceFor completes it:
 *   $25 in data/prices.json). So overriding a model's token rates does not reprice its web
 *   searches at the default's.
 * - `maxOutput` is a fact about the model, not a price: absent, the table entry's still applies,
 *   so overriding claude-sonnet-4-5's rates keeps its 64,000-token maximum output.
 * - `longContext`: the override's rates, or none when it says `null` (every call at the base
 *   rates). Absent: refused where the override is written when the entry has long-context rates
 *   ({@link droppedLongContext}: the API's 400, flotilla.yaml at start), since they are prices
 *   tied to the base rates and only the operator knows which fit theirs. An override that still
 *   says neither — stored before the API took `longContext`, or before the table gave the model
 *   long-context rates — takes the table entry's: the gateway never drops them silently (that
 *   undercharges every call past 200,000 input-side tokens by half).
 */
export function overriddenPrice(table: PriceTable, model: string, override: PriceOverride): TablePrice {
  const replaced = tokenPriceFor(table, model);
  const price: TablePrice = { input: override.input, output: override.output, cacheWrite5m: override.cacheWrite5m, cacheWrite1h: override.cacheWrite1h, cacheRead: override.cacheRead };
  // a model the table does not list keeps none here: priceFor completes it with the default's
  const webSearch = override.webSearch ?? (replaced === table.default ? undefined : replaced.webSearch);
  if (webSearch !== undefined) price.webSearch = webSearch;
  const maxOutput = override.maxOutput ?? replaced.maxOutput;
  if (maxOutput !== undefined) price.maxOutput = maxOutput;
  const longContext = override.longContext === undefined ? replaced.longContext : override.longContext;
  if (longContext) price.longContext = longContext;
  return price;
}

/**
 * `table` with `overrides` (model name → override) laid over it, each combined by
 * {@link overriddenPrice} with the entry the gateway would price its name at without it: the
 * table's, or another override's of these. Shortest name first: the entry a name falls back to
 * is its own, its undated name's or a listed name it extends (prices.ts tokenPriceFor), always a
 * shorter one, so `zeta-mini` given beside `zeta` takes what it leaves out (`maxOutput`,
 * `webSearch`, long-context rates) from the `zeta` given, as calls of `zeta-mini` without an
 * override of its own are priced at it (before, from the table's entry, or its default).
 * `check(model, override, replacedTable)` runs before each is laid (a refusal throws there).
 */
export function layOverrides(table: PriceTable, overrides: ReadonlyArray<readonly [string, PriceOverride]>, check?: (model: string, override: PriceOverride, under: PriceTable) => void): PriceTable {
  if (overrides.length === 0) return table;
  const laid: PriceTable = { ...table, models: { ...table.models } };
  const ordered = [...overrides].sort((a, b) => a[0].length - b[0].length);
  for (const [model, override] of ordered) {
    check?.(model, override, laid);
    setModelPrice(laid.models, model, overriddenPrice(laid, model, override));
  }
  return laid;
}

/**
 * The long-context rates an override of `model` would drop by leaving `longContext` out: the
 * table entry's ({@link tokenPriceFor}) when it has some and the override says neither rates
 * nor `null`; else null (nothing dropped).
 */
export function droppedLongContext(table: PriceTable, model: string, override: PriceOverride): LongContextPrice | null {
  if (override.longContext !== undefined) return null;
  return tokenPriceFor(table, model).longContext ?? null;
}

/**
 * Why an override of `model` that leaves out `longContext` is refused, `lc` being the rates it
 * would take (no field name in front); `by` says whose they are: the price table's, or another
 * override's (`the API's price of zeta` for zeta-mini).
 */
export function droppedLongContextMessage(model: string, lc: LongContextPrice, by = 'the price table'): string {
  return (
    `${by} prices ${model} calls above ${lc.aboveInputTokens} input-side tokens at long-context rates ` +
    `(input ${lc.input}, output ${lc.output}, cache write ${lc.cacheWrite5m} / ${lc.cacheWrite1h}, cache read ${lc.cacheRead} USD per million tokens); ` +
    `an override must give its own (longContext: { aboveInputTokens, input, output, cacheWrite5m, cacheWrite1h, cacheRead }) ` +
    `or longContext: null to price every call at its base rates`
  );
}

/** `usd` at its whole micro-dollar (6 decimals): 0.30000000000000004 (0.1 + 0.2 in a client's floats) → 0.3. */
const toMicro = (usd: number): number => Math.round(usd * 1_000_000) / 1_000_000;

/**
 * `price` with every rate (USD per million tokens, per 1,000 searches; long-context ones too) at
 * its 6-decimal value: the API takes a rate within float noise of whole micro-dollars (protocol
 * UsdRate), and stored as sent, `0.30000000000000004` was what `flotilla models`, `--json` and the
 * dashboard showed (fresh-tester finding); the gateway charges the rounded rate either way
 * (core/pricing.ts). Token counts (`maxOutput`, `aboveInputTokens`) are left as they are.
 */
export function roundedRates(price: PriceOverride): PriceOverride {
  const out = withTokenRatesRounded(price);
  if (price.webSearch !== undefined) out.webSearch = toMicro(price.webSearch);
  if (price.longContext) out.longContext = withTokenRatesRounded(price.longContext);
  return out;
}

/** The token rates a base price and long-context rates both have. */
const TOKEN_RATES = ['input', 'output', 'cacheWrite5m', 'cacheWrite1h', 'cacheRead'] as const;

/** A copy of `rates` with its {@link TOKEN_RATES} at 6 decimals, its other fields as they are. */
function withTokenRatesRounded<T extends Record<(typeof TOKEN_RATES)[number], number>>(rates: T): T {
  const out = { ...rates };
  for (const k of TOKEN_RATES) out[k] = toMicro(rates[k]) as T[typeof k];
  return out;
}

/** An override that gives no long-context rates of its own, whose inherited ones a change would move. */
export interface InheritedLongContextChange {
  model: string;
  /** The rates it takes now, or null: none (every call at its base rates). */
  before: LongContextPrice | null;
  /** The rates it would take after the change, or null. */
  after: LongContextPrice | null;
}

/**
 * The overrides among `after` that leave `longContext` out and whose long-context rates —
 * taken from the entry each replaces ({@link overriddenPrice}) — differ between `table` with
 * `before` laid over it and with `after` ({@link layOverrides}): a change of another override
 * (a shorter name's set with rates, or deleted) would reprice their long calls though nobody
 * set them (a fresh tester: `eta-mini` set at $1 took `eta`'s $50 long-context rates set
 * later, ~50× the charge). Names in `after`'s order.
 */
export function inheritedLongContextChanges(table: PriceTable, before: ReadonlyArray<readonly [string, PriceOverride]>, after: ReadonlyArray<readonly [string, PriceOverride]>): InheritedLongContextChange[] {
  const silent = after.filter(([, o]) => o.longContext === undefined);
  if (silent.length === 0) return [];
  const was = layOverrides(table, before);
  const now = layOverrides(table, after);
  const out: InheritedLongContextChange[] = [];
  for (const [model] of silent) {
    const b = priceFor(was, model).longContext ?? null;
    const a = priceFor(now, model).longContext ?? null;
    if (JSON.stringify(b) !== JSON.stringify(a)) out.push({ model, before: b, after: a });
  }
  return out;
}

/** Long-context rates as a phrase: `above 100 input-side tokens: input 50, output 50, cache write 62.5 / 100, cache read 5`, or `none`. */
export function longContextPhrase(lc: LongContextPrice | null): string {
  return lc ? `above ${lc.aboveInputTokens} input-side tokens: input ${lc.input}, output ${lc.output}, cache write ${lc.cacheWrite5m} / ${lc.cacheWrite1h}, cache read ${lc.cacheRead} USD per million tokens` : 'none';
}
