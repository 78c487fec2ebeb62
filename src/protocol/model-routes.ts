import { z } from 'zod';

/**
 * Model routes and price overrides of the gateway (issue 3): which provider serves a model
 * name, by configuration (flotilla.yaml `gateway.models`, FLOTILLA_MODEL_PROVIDERS) or through
 * the API (stored; API routes win over configured ones; `*` is the default). Prices are USD
 * per million tokens. Provider API keys are never part of these shapes.
 */

/** A provider the gateway can send a call to. */
export const ProviderName = z.enum(['anthropic', 'scripted', 'openai', 'openai-compatible']);
export type ProviderName = z.infer<typeof ProviderName>;

/** A model name, or a glob of one (`*` = any run of characters; `*` alone = the default route). */
export const ModelPattern = z
  .string()
  .regex(/^[A-Za-z0-9._:@/*+-]{1,200}$/, 'must be 1-200 characters of letters, digits, . _ : @ / + - and * (a glob)');

/** One route. `source`: `api` (stored, can be changed through the API) or `config` (flotilla.yaml / environment, read-only here). */
export const ModelRoute = z.object({
  pattern: ModelPattern,
  provider: ProviderName,
  source: z.enum(['api', 'config']),
  /** When it was last set (api routes only), ISO-8601. */
  updatedAt: z.string().nullable(),
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
 * `aboveInputTokens` (tokens, a whole number ≥ 1). data/prices.json: Claude Sonnet 4 / 4.5
 * above 200,000 at input 6, output 22.50, cache write 7.50 (5 min) / 12 (1 h), cache read 0.60.
 * The same shape in data/prices.json, flotilla.yaml and the API (gateway/price-schema.ts uses
 * this schema); rates 0 to 1,000,000 like the base ones; no other keys.
 */
export const LongContextPrice = z
  .object({
    aboveInputTokens: z.number().int().positive(),
    input: z.number().nonnegative().max(1_000_000),
    output: z.number().nonnegative().max(1_000_000),
    cacheWrite5m: z.number().nonnegative().max(1_000_000),
    cacheWrite1h: z.number().nonnegative().max(1_000_000),
    cacheRead: z.number().nonnegative().max(1_000_000),
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
 * The same validation as data/prices.json (gateway/price-schema.ts); no other keys.
 */
export const ModelPrice = z
  .object({
    input: z.number().nonnegative().max(1_000_000),
    output: z.number().nonnegative().max(1_000_000),
    cacheWrite5m: z.number().nonnegative().max(1_000_000),
    cacheWrite1h: z.number().nonnegative().max(1_000_000),
    cacheRead: z.number().nonnegative().max(1_000_000),
    webSearch: z.number().nonnegative().max(1_000_000).optional(),
    maxOutput: MaxOutputTokens.optional(),
    longContext: LongContextPrice.nullable().optional(),
  })
  .strict();
export type ModelPrice = z.infer<typeof ModelPrice>;

/** A price override set through the API, for a model name (or name prefix, matched as the price table matches names). */
export const ModelPriceOverride = z.object({ model: z.string(), price: ModelPrice, updatedAt: z.string() });
export type ModelPriceOverride = z.infer<typeof ModelPriceOverride>;

/**
 * `GET /api/gateway/routes`: the routes in the order they are tried (API routes, most specific
 * first; then configured ones in file order; then the defaults), the API's price overrides and
 * the shipped price table's version. `configured: false` = no route anywhere: every model goes
 * to its wire format's own provider.
 */
export const ModelRoutesView = z.object({
  routes: z.array(ModelRoute),
  prices: z.array(ModelPriceOverride),
  priceTableVersion: z.string(),
  configured: z.boolean(),
});
export type ModelRoutesView = z.infer<typeof ModelRoutesView>;

/** `PUT /api/gateway/routes` body: create or replace the API route of `pattern`. */
export const SetModelRouteRequest = z.object({ pattern: ModelPattern, provider: ProviderName }).strict();
export type SetModelRouteRequest = z.infer<typeof SetModelRouteRequest>;

/**
 * `PUT /api/gateway/prices` body: create or replace the price override of `model` (no `*`).
 * 400 naming `price.longContext` when `price` leaves `longContext` out for a model whose
 * price table entry has long-context rates ({@link ModelPrice}).
 */
export const SetModelPriceRequest = z
  .object({ model: z.string().regex(/^[A-Za-z0-9._:@/+-]{1,200}$/, 'must be a model name or name prefix (no *)'), price: ModelPrice })
  .strict();
export type SetModelPriceRequest = z.infer<typeof SetModelPriceRequest>;
