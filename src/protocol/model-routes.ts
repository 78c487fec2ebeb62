import { z } from 'zod';
import { wholeMicros } from './usd.js';

/**
 * Model routes and price overrides of the gateway (issue 3): which provider serves a model
 * name, by configuration (flotilla.yaml `gateway.models`, FLOTILLA_MODEL_PROVIDERS) or through
 * the API (stored; API routes win over configured ones; `*` is the default). Prices are USD
 * per million tokens. Provider API keys are never part of these shapes.
 */

/** The refusal of a price name ending in "-" (`gpt-4o-`), with the names the name without it would price (prices.ts priceFor's words). */
function endsWithDash(name: string): string {
  const m = name.replace(/-+$/, '') || 'gz';
  return `must not end with "-": give the model's own name ("${m}" also prices "${m}-20250101", "${m}-latest", "${m}-mini", "${m}-nano", "${m}-chat", "${m}-codex" and "${m}-v2"; any other name, such as "${m}-pro", needs a price of its own)`;
}

/**
 * A model name or name prefix that a price is set for (price tables match names as
 * gateway/prices.ts priceFor does): 1-200 characters of letters, digits and `. _ : @ / + -`; no
 * `*` (prices are not globs), spaces or other characters, and not ending with `-` (`gz-` would
 * match only itself). A name's price also covers its snapshots and the variants that never
 * name a dearer model (gateway/prices.ts priceFor: `gz-20250101`, `gz-latest`, `gz-mini`,
 * `gz-nano`, `gz-chat`, `gz-codex`, `gz-v2`), not any name that continues it (`gz-pro` is
 * another model, priced at the table's default until it has a price). The one rule for `PUT
 * /api/gateway/prices` ({@link SetModelPriceRequest} `model`) and flotilla.yaml
 * `gateway.prices` (gateway/config-file.ts), so a name one takes the other takes too.
 */
export const PriceModelName = z
  .string()
  .regex(/^[A-Za-z0-9._:@/+-]{1,200}$/, 'must be 1-200 characters of letters, digits, . _ : @ / + and - (a model name or name prefix: no *, spaces or other characters)')
  // a prefix matches at a `-` boundary, and only some words after it (prices.ts priceFor): `gz-` would only ever match itself
  .refine((m) => !m.endsWith('-'), { error: (iss) => endsWithDash(String(iss.input)), abort: true })
  // an override of that name priced only a model called "default", not the table's default entry (a fresh user's finding)
  .refine((m) => m !== 'default', { message: `must not be "default": that is the price table's entry for the models it does not list, which an override does not replace (give the server a price table of your own with FLOTILLA_PRICES_FILE)`, abort: true });

/** Largest long-context threshold, input-side tokens ({@link LongContextPrice} `aboveInputTokens`; far above any model's context window): the API, flotilla.yaml and the CLI's `--long-context-above` alike. */
export const MAX_LONG_CONTEXT_ABOVE = 100_000_000;

/** Most decimal places a price rate ({@link UsdRate}) may have: 6. */
export const RATE_MAX_DECIMALS = 6;

/**
 * A price rate: USD per million tokens (a rate of P is P µ$ per token), or for `webSearch` USD
 * per 1,000 searches. A number from 0 to 1,000,000 with at most {@link RATE_MAX_DECIMALS}
 * decimals (steps of 0.000001; binary float noise of such a number, 0.1 + 0.2, passes).
 * The one rule for every rate wherever it is written: data/prices.json (or
 * FLOTILLA_PRICES_FILE, gateway/price-schema.ts), flotilla.yaml `gateway.prices`, `PUT
 * /api/gateway/prices` (base and long-context rates alike) and `flotilla models price` (the
 * CLI's usdArg takes 6 decimals too). Why 6: the gateway prices a call exactly by turning a
 * token rate into a whole number of 10⁻¹² USD per token (core/pricing.ts, rate × 10⁶), so a
 * finer rate would be rounded there without a word (0.0000001 would charge nothing).
 * Failures: `must be greater than or equal to 0`, `must be less than or equal to 1000000`
 * (zod's wording), `must have at most 6 decimals (...)`.
 */
export const UsdRate = z
  .number()
  .nonnegative()
  .max(1_000_000)
  // out of range: that one message only (1e308 × 10⁶ is Infinity, not a whole number of µ$)
  .refine((usd) => usd < 0 || usd > 1_000_000 || wholeMicros(usd), { message: `must have at most ${RATE_MAX_DECIMALS} decimals (the smallest step is 0.000001; a finer rate cannot be charged and would be rounded)`, abort: true });

/** A provider the gateway can send a call to. */
export const ProviderName = z.enum(['anthropic', 'scripted', 'openai', 'openai-compatible']);
export type ProviderName = z.infer<typeof ProviderName>;

/**
 * A model name, or a glob of one (`*` = any run of characters; `*` alone = the default route).
 * A run of `*` is refused: it matches what one does, but `**` would rank as a glob with no
 * literal characters above every configured route and the `*` default (fresh-user finding).
 */
export const ModelPattern = z
  .string()
  .regex(/^[A-Za-z0-9._:@/*+-]{1,200}$/, 'must be 1-200 characters of letters, digits, . _ : @ / + - and * (a glob)')
  .refine((p) => !p.includes('**'), { message: 'must not hold ** (a run of * matches what one * does: write one)', abort: true });

/** One route. `source`: `api` (stored, can be changed through the API) or `config` (flotilla.yaml / environment, read-only here). */
export const ModelRoute = z.object({
  pattern: ModelPattern,
  provider: ProviderName,
  source: z.enum(['api', 'config']),
  /** When it was last set (api routes only), ISO-8601. */
  updatedAt: z.string().nullable(),
  /** Present when its provider is not configured on the server that answered: what its calls get and how to fix it. */
  warning: z.string().optional(),
});
export type ModelRoute = z.infer<typeof ModelRoute>;

/**
 * The gateway's ceiling on output tokens per call, tokens: the most a model's maximum output
 * (`maxOutput`) may say, and the largest output limit a model request may set
 * (gateway/request.ts re-exports it as its MAX_OUTPUT_TOKENS_CEILING).
 */
export const MAX_OUTPUT_TOKENS_CEILING = 1_000_000;

/**
 * A model's maximum output, tokens: the most output tokens one call can produce (the provider's
 * documented maximum, with any beta that raises it). A whole number from 1 to
 * {@link MAX_OUTPUT_TOKENS_CEILING}. The gateway reserves, and charges, at most this much output
 * per call (gateway/max-output.ts).
 */
export const MaxOutputTokens = z.number().int().min(1).max(MAX_OUTPUT_TOKENS_CEILING);
export type MaxOutputTokens = z.infer<typeof MaxOutputTokens>;

/**
 * Long-context rates (Anthropic's long-context pricing): rates, USD per million tokens, that
 * replace a model's base rates for EVERY token of a call (output included; web searches keep
 * their price) whose input side — input + cache write + cache read tokens — is more than
 * `aboveInputTokens` (tokens, a whole number from 1 to {@link MAX_LONG_CONTEXT_ABOVE}). data/prices.json: Claude Sonnet 4 / 4.5
 * above 200,000 at input 6, output 22.50, cache write 7.50 (5 min) / 12 (1 h), cache read 0.60.
 * The same shape in data/prices.json, flotilla.yaml and the API (gateway/price-schema.ts uses
 * this schema); rates are {@link UsdRate}s like the base ones (0 to 1,000,000, at most 6
 * decimals); no other keys.
 */
export const LongContextPrice = z
  .object({
    aboveInputTokens: z.number().int().positive().max(MAX_LONG_CONTEXT_ABOVE),
    input: UsdRate,
    output: UsdRate,
    cacheWrite5m: UsdRate,
    cacheWrite1h: UsdRate,
    cacheRead: UsdRate,
  })
  .strict();
export type LongContextPrice = z.infer<typeof LongContextPrice>;

/**
 * A price override: USD per million tokens per token category, and optionally
 * - `webSearch`: USD per 1,000 server-side web search requests, as data/prices.json writes it
 *   (absent: the price table's value for the model, else its default entry's);
 * - `maxOutput`: the model's maximum output, tokens ({@link MaxOutputTokens}). It is a fact
 *   about the model, not a price: absent, the price table's value for the model still applies;
 * - `longContext`: the model's long-context rates ({@link LongContextPrice}), or `null` to price
 *   every call at the base rates. Unlike `maxOutput` it is NOT inherited from the table when
 *   left out: long-context rates are prices, set relative to the base rates, and the table's
 *   ($6 input above 200,000 tokens for list $3) would be wrong under other base rates (a
 *   discount would not reach long calls; a markup over $6 would make long calls cheaper than
 *   short ones). Dropping them silently is worse: such calls are undercharged by half. So an
 *   override of a model whose table entry has long-context rates must say which: its own, or
 *   `null`; leaving it out is refused (400 naming `price.longContext`; flotilla.yaml: refused at
 *   start). An override of a model without long-context rates may leave it out. (An override
 *   stored before the API took `longContext` says neither: the gateway applies the table's.)
 * Every rate is a {@link UsdRate}: 0 to 1,000,000 with at most 6 decimals (a finer one is a 400
 * naming the field: it could not be charged). The same validation as data/prices.json and
 * flotilla.yaml (gateway/price-schema.ts, gateway/config-file.ts); no other keys.
 */
export const ModelPrice = z
  .object({
    input: UsdRate,
    output: UsdRate,
    cacheWrite5m: UsdRate,
    cacheWrite1h: UsdRate,
    cacheRead: UsdRate,
    webSearch: UsdRate.optional(),
    maxOutput: MaxOutputTokens.optional(),
    longContext: LongContextPrice.nullable().optional(),
  })
  .strict();
export type ModelPrice = z.infer<typeof ModelPrice>;

/** The cache rates of a price, USD per million tokens: cache writes (5-minute, 1-hour) and cache reads. */
export interface CacheRates {
  cacheWrite5m: number;
  cacheWrite1h: number;
  cacheRead: number;
}

/**
 * What each cache rate a price leaves out is, as a multiple of its `input` rate: the ratios of
 * the price table entry the override replaces ({@link cacheRatiosOf}), so that overriding an
 * OpenAI model's rates keeps OpenAI's cached-input discount (gpt-4o reads at half its input
 * rate, gpt-5 at a tenth; a fresh tester's gpt-4o override read at a tenth undercharged every
 * cached token by 5x), or, for a model the table prices at nothing, Anthropic's multipliers
 * ({@link ANTHROPIC_CACHE_RATIOS}).
 */
export interface CacheRatios {
  cacheWrite5m: number;
  cacheWrite1h: number;
  cacheRead: number;
}

/** Anthropic's cache multipliers (its pricing page): 5-minute writes input × 1.25, 1-hour writes × 2, reads × 0.1; also the price table's default entry's. */
export const ANTHROPIC_CACHE_RATIOS: CacheRatios = { cacheWrite5m: 1.25, cacheWrite1h: 2, cacheRead: 0.1 };

/** The cache ratios of a price (each cache rate ÷ its input rate), or {@link ANTHROPIC_CACHE_RATIOS} when it has none or its input rate is 0. */
export function cacheRatiosOf(price: ({ input: number } & CacheRates) | null | undefined): CacheRatios {
  if (!price || !(price.input > 0)) return ANTHROPIC_CACHE_RATIOS;
  return { cacheWrite5m: price.cacheWrite5m / price.input, cacheWrite1h: price.cacheWrite1h / price.input, cacheRead: price.cacheRead / price.input };
}

/** The ratios a price's base rates and its `longContext` rates take their left-out cache rates from. */
export interface PriceRatios {
  base: CacheRatios;
  longContext: CacheRatios;
}

/**
 * The ratios an override of a model takes its left-out cache rates from: those of `replaced`,
 * the price table entry it replaces (gateway/prices.ts tokenPriceFor; the table's default
 * entry for a model it does not list), its long-context rates' from the entry's long-context
 * rates, else from its base ones. Without an entry: Anthropic's.
 */
export function priceRatiosOf(replaced: ({ input: number; longContext?: ({ input: number } & CacheRates) | null } & CacheRates) | null | undefined): PriceRatios {
  const base = cacheRatiosOf(replaced);
  return { base, longContext: replaced?.longContext ? cacheRatiosOf(replaced.longContext) : base };
}

const round6 = (x: number) => Math.round(x * 1e6) / 1e6;

/**
 * The cache rates a price leaves out, worked out from its `input` rate (USD per million
 * tokens) and `ratios` (default Anthropic's: × 1.25, × 2, × 0.1), each rounded to 6 decimals
 * so float noise is not stored (input 3 → 3.75, 6 and 0.3, not 0.30000000000000004). The one
 * rule for `PUT /api/gateway/prices` ({@link setModelPriceRequestFor}), flotilla.yaml and the
 * dashboard's price form (both leave them to it), base and long-context rates alike.
 * @throws nothing; `input` is assumed validated (0 to 1,000,000): a result past 1,000,000 is
 *   refused by the schema the price then passes ({@link ModelPrice}).
 */
export function defaultCacheRates(input: number, ratios: CacheRatios = ANTHROPIC_CACHE_RATIOS): CacheRates {
  return { cacheWrite5m: round6(input * ratios.cacheWrite5m), cacheWrite1h: round6(input * ratios.cacheWrite1h), cacheRead: round6(input * ratios.cacheRead) };
}

/** `rates` with each cache rate it leaves out (absent or undefined) set by {@link defaultCacheRates} from its `input` and `ratios`; the other keys as given. */
export function withDefaultCacheRates<T extends { input: number } & Partial<CacheRates>>(rates: T, ratios: CacheRatios = ANTHROPIC_CACHE_RATIOS): T & CacheRates {
  const d = defaultCacheRates(rates.input, ratios);
  return { ...rates, cacheWrite5m: rates.cacheWrite5m ?? d.cacheWrite5m, cacheWrite1h: rates.cacheWrite1h ?? d.cacheWrite1h, cacheRead: rates.cacheRead ?? d.cacheRead };
}

const rate = UsdRate;
/**
 * The cache rates `rates` leaves out whose default ({@link defaultCacheRates} with `ratios`) is
 * past the most a rate may be (1,000,000: with Anthropic's ratios an input rate above 500,000
 * makes the 1-hour write's), each with the message saying so: `left out, it defaults to input ×
 * 2 = 1600000, past the most a rate may be (1000000): give cacheWrite1h`. The API, flotilla.yaml
 * and `flotilla models price` say this rather than "too big" about a field the user did not give.
 */
export function defaultsPastMax(rates: { input: number } & Partial<CacheRates>, ratios: CacheRatios = ANTHROPIC_CACHE_RATIOS): Array<{ key: keyof CacheRates; message: string }> {
  const d = defaultCacheRates(rates.input, ratios);
  const out: Array<{ key: keyof CacheRates; message: string }> = [];
  for (const key of ['cacheWrite5m', 'cacheWrite1h', 'cacheRead'] as const) {
    if (rates[key] === undefined && d[key] > 1_000_000) out.push({ key, message: `left out, it defaults to input × ${round6(ratios[key])} = ${d[key]}, past the most a rate may be (1000000): give ${key}` });
  }
  return out;
}

/**
 * The zod transform of a price whose cache rates — and those of its `longContext`, if any — may
 * be left out: each set from the input rate beside it and `ratios` ({@link withDefaultCacheRates});
 * a default past the most a rate may be is an issue at that field ({@link defaultsPastMax},
 * under `path`) and nothing is returned. The one step for `PUT /api/gateway/prices`
 * ({@link setModelPriceRequestFor}) and flotilla.yaml's `gateway.prices` (gateway/config-file.ts).
 */
export function withDefaultPriceRates<P extends { input: number } & Partial<CacheRates>, L extends { input: number } & Partial<CacheRates>>(
  p: P & { longContext?: L | null },
  ctx: z.RefinementCtx,
  ratios: PriceRatios = { base: ANTHROPIC_CACHE_RATIOS, longContext: ANTHROPIC_CACHE_RATIOS },
  path: (string | number)[] = [],
): (Omit<P, 'longContext'> & CacheRates & { longContext?: (L & CacheRates) | null }) {
  const { longContext, ...base } = p;
  const past = [
    ...defaultsPastMax(base, ratios.base).map((x) => ({ path: [...path, x.key], message: x.message })),
    ...(longContext ? defaultsPastMax(longContext, ratios.longContext).map((x) => ({ path: [...path, 'longContext', x.key], message: x.message })) : []),
  ];
  for (const x of past) ctx.addIssue({ code: 'custom', path: x.path, message: x.message });
  if (past.length > 0) return z.NEVER;
  return { ...withDefaultCacheRates(base as unknown as P, ratios.base), ...(longContext === undefined ? {} : { longContext: longContext && withDefaultCacheRates(longContext, ratios.longContext) }) };
}

/** The cache rates as a request may give them: each optional, defaulted from `input` ({@link defaultCacheRates}). */
const optionalCacheRates = {
  cacheWrite5m: rate.optional().describe('cache writes, 5-minute, USD per million tokens (absent: input × the replaced price table entry\'s ratio; × 1.25 for a model the table does not list)'),
  cacheWrite1h: rate.optional().describe('cache writes, 1-hour, USD per million tokens (absent: input × the replaced entry\'s ratio; × 2 for a model the table does not list)'),
  cacheRead: rate.optional().describe('cache reads, USD per million tokens (absent: input × the replaced entry\'s ratio, e.g. 0.5 for gpt-4o; × 0.1 for a model the table does not list)'),
};

/** A price as `PUT /api/gateway/prices` takes it, before its left-out cache rates are set ({@link setModelPriceRequestFor}). */
export const ModelPriceInput = ModelPrice.extend({ ...optionalCacheRates, longContext: LongContextPrice.extend(optionalCacheRates).nullable().optional() });

/**
 * A price as `PUT /api/gateway/prices` takes it: {@link ModelPrice} whose cache rates (and
 * those of `longContext`) may be left out, each then set from the input rate beside it with
 * Anthropic's ratios; the result is checked as a {@link ModelPrice}. (The API itself takes
 * them from the price table entry the override replaces: {@link setModelPriceRequestFor}.)
 * A default past 1,000,000 is a 400 naming the field left out and saying it is a default
 * (`price.cacheWrite1h: left out, it defaults to input × 2 = 1600000, ...`).
 */
export const ModelPriceRequest = ModelPriceInput.transform((p, ctx) => withDefaultPriceRates(p, ctx)).pipe(ModelPrice);

/** A price override set through the API, for a model name (or name prefix, matched as the price table matches names). */
export const ModelPriceOverride = z.object({ model: z.string(), price: ModelPrice, updatedAt: z.string() });
export type ModelPriceOverride = z.infer<typeof ModelPriceOverride>;

/**
 * Where a price the gateway uses comes from: the price table (data/prices.json, or
 * FLOTILLA_PRICES_FILE; its version is {@link ModelRoutesView}'s `priceTableVersion`), the
 * config file's `gateway.prices` (flotilla.yaml or FLOTILLA_CONFIG), or an override set through
 * the API. Later ones win: `api` over `flotilla.yaml` over `table`.
 */
export const PriceSource = z.enum(['table', 'flotilla.yaml', 'api']);
export type PriceSource = z.infer<typeof PriceSource>;

/** What a price override's own fields fall back to when it leaves them out: these are taken from the entry it replaces (gateway/price-override.ts overriddenPrice, prices.ts priceFor). */
export const KeptPriceField = z.enum(['webSearch', 'maxOutput', 'longContext']);
export type KeptPriceField = z.infer<typeof KeptPriceField>;

/**
 * A price the gateway applies to a model name (or name prefix, matched as the price table
 * matches names) other than the table's own: one per name overridden in flotilla.yaml or
 * through the API, the winner only (an API override of a name flotilla.yaml also prices
 * replaces it: `replaces.source` says so).
 * - `price`: what the gateway charges, USD per million tokens (`webSearch` USD per 1,000
 *   searches, `maxOutput` tokens) — the override combined with the entry it replaces, as the
 *   gateway combines them; `longContext` absent = none; `null` = the override dropped the
 *   replaced entry's rates (every call at the base rates).
 * - `source`: who set it; `updatedAt`: when (ISO-8601, `api` only, else null).
 * - `replaces`: the entry it replaced, found by the table's name matching: `model` null = the
 *   table's default entry (the name is not listed); `source` `api` or `flotilla.yaml` when that
 *   entry is a shorter name's override of the same origin (`zeta-mini` under `zeta`), or an API
 *   override's under a name flotilla.yaml prices.
 * - `kept`: the fields of `price` taken from the replaced entry (the override left them out).
 */
export const PriceInEffect = z.object({
  model: z.string(),
  price: ModelPrice,
  source: PriceSource.exclude(['table']),
  updatedAt: z.string().nullable(),
  replaces: z.object({ source: PriceSource, model: z.string().nullable() }),
  kept: z.array(KeptPriceField),
});
export type PriceInEffect = z.infer<typeof PriceInEffect>;

/**
 * `GET /api/gateway/routes`: the routes in the order they are tried (API routes, most specific
 * first; then configured ones in file order; then the defaults), the API's price overrides as
 * stored (`prices`), every price in effect other than the table's (`pricesInEffect`:
 * flotilla.yaml's and the API's, with where each came from) and the price table's version.
 * `configured: false` = no route anywhere: every model goes to its wire format's own provider.
 */
export const ModelRoutesView = z.object({
  routes: z.array(ModelRoute),
  prices: z.array(ModelPriceOverride),
  pricesInEffect: z.array(PriceInEffect),
  priceTableVersion: z.string(),
  configured: z.boolean(),
});
export type ModelRoutesView = z.infer<typeof ModelRoutesView>;

/** `PUT /api/gateway/routes` body: create or replace the API route of `pattern`. */
export const SetModelRouteRequest = z.object({ pattern: ModelPattern, provider: ProviderName }).strict();
export type SetModelRouteRequest = z.infer<typeof SetModelRouteRequest>;

/**
 * `PUT /api/gateway/prices` body: create or replace the price override of `model` (no `*`),
 * as the API reads it: `price` is a {@link ModelPriceInput} whose left-out cache rates are
 * set from its input rate with `ratiosFor(model)` (the server: the ratios of the price table
 * entry the override replaces, {@link priceRatiosOf}; gpt-4o's cache reads at input × 0.5,
 * Claude's at × 0.1, a model the table does not list at the default entry's, Anthropic's
 * × 1.25, × 2, × 0.1). 400 naming `price.longContext` when `price` leaves `longContext` out
 * for a model whose price table entry has long-context rates ({@link ModelPrice}). `model` is
 * a {@link PriceModelName}; every rate a {@link UsdRate} (400 naming the field, e.g.
 * `price.input: must have at most 6 decimals ...`).
 */
export function setModelPriceRequestFor(ratiosFor: (model: string) => PriceRatios) {
  return z
    .object({ model: PriceModelName, price: ModelPriceInput })
    .strict()
    .transform((v, ctx) => {
      const price = withDefaultPriceRates(v.price, ctx, ratiosFor(v.model), ['price']);
      return price === z.NEVER ? z.NEVER : { model: v.model, price };
    })
    .pipe(z.object({ model: z.string(), price: ModelPrice }));
}

/** {@link setModelPriceRequestFor} with Anthropic's ratios for every model: the body's shape for the OpenAPI document and clients. */
export const SetModelPriceRequest = setModelPriceRequestFor(() => ({ base: ANTHROPIC_CACHE_RATIOS, longContext: ANTHROPIC_CACHE_RATIOS }));
export type SetModelPriceRequest = z.infer<typeof SetModelPriceRequest>;
