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
 * USD per million tokens per token category; `webSearch` (optional): USD per 1,000 server-side
 * web search requests, as data/prices.json writes it (absent: the price table's default entry's).
 */
export const ModelPrice = z
  .object({
    input: z.number().nonnegative().max(1_000_000),
    output: z.number().nonnegative().max(1_000_000),
    cacheWrite5m: z.number().nonnegative().max(1_000_000),
    cacheWrite1h: z.number().nonnegative().max(1_000_000),
    cacheRead: z.number().nonnegative().max(1_000_000),
    webSearch: z.number().nonnegative().max(1_000_000).optional(),
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

/** `PUT /api/gateway/prices` body: create or replace the price override of `model` (no `*`). */
export const SetModelPriceRequest = z
  .object({ model: z.string().regex(/^[A-Za-z0-9._:@/+-]{1,200}$/, 'must be a model name or name prefix (no *)'), price: ModelPrice })
  .strict();
export type SetModelPriceRequest = z.infer<typeof SetModelPriceRequest>;
