import { LongContextPrice, MAX_OUTPUT_TOKENS_CEILING, MaxOutputTokens } from '../protocol/index.js';
import { num } from './codec.js';
import { assertInt, type StoreCtx } from './ctx.js';
import type { ModelPriceRow, ModelRouteRow } from './types.js';

/**
 * Model routes and price overrides set through the API (issue 3: "a model name maps to a
 * provider by configuration (flotilla.yaml or the API), with a default"). Stored so that every
 * gateway replica routes and prices alike. Times are epoch ms; prices USD per million tokens.
 */

/** The providers a route may name (gateway/config.ts ProviderName). */
export const ROUTE_PROVIDERS = ['anthropic', 'scripted', 'openai', 'openai-compatible'] as const;

/** A pattern: 1–200 characters of model-name characters and `*` (glob), no spaces. */
const PATTERN = /^[A-Za-z0-9._:@/*+-]{1,200}$/;

/** @throws Error `model route pattern ...` unless `p` is a valid pattern. */
export function assertPattern(what: string, p: unknown): asserts p is string {
  if (typeof p !== 'string' || !PATTERN.test(p)) {
    throw new Error(`store: ${what} must be 1-200 characters of letters, digits, . _ : @ / + - and * (a glob), got ${JSON.stringify(p)}`);
  }
}

/** Every route, pattern ascending. */
export async function listModelRoutes(c: StoreCtx): Promise<ModelRouteRow[]> {
  const rows = await c.db.selectFrom('model_routes').select(['pattern', 'provider', 'updated_at']).orderBy('pattern').execute();
  return rows.map((r) => ({ pattern: r.pattern, provider: r.provider, updatedAt: num(r.updated_at) }));
}

/**
 * Creates or replaces the route of `pattern` (one upsert).
 * @throws Error naming a bad pattern or a provider not in {@link ROUTE_PROVIDERS}.
 */
export async function setModelRoute(c: StoreCtx, pattern: string, provider: string, now: number): Promise<ModelRouteRow> {
  assertPattern('pattern', pattern);
  if (!(ROUTE_PROVIDERS as readonly string[]).includes(provider)) {
    throw new Error(`store: provider must be one of ${ROUTE_PROVIDERS.join(', ')}, got ${JSON.stringify(provider)}`);
  }
  assertInt('now', now, 0);
  await c.db
    .insertInto('model_routes')
    .values({ pattern, provider, updated_at: now })
    .onConflict((oc) => oc.column('pattern').doUpdateSet({ provider, updated_at: now }))
    .execute();
  return { pattern, provider, updatedAt: now };
}

/** Deletes the route of `pattern`; false when there was none. */
export async function deleteModelRoute(c: StoreCtx, pattern: string): Promise<boolean> {
  const res = await c.db.deleteFrom('model_routes').where('pattern', '=', pattern).executeTakeFirst();
  return Number(res.numDeletedRows) > 0;
}

const PRICE_FIELDS = ['input', 'output', 'cacheWrite5m', 'cacheWrite1h', 'cacheRead'] as const;

/**
 * @throws Error naming the first price field that is not valid: token rates finite numbers from
 * 0 to 1,000,000 (USD per million tokens); `webSearch`, optional, the same (USD per 1,000
 * searches); `maxOutput`, optional, a whole number of tokens (protocol MaxOutputTokens);
 * `longContext`, optional, null or long-context rates (protocol LongContextPrice).
 */
function assertPrice(p: ModelPriceRow['price']): void {
  if (typeof p !== 'object' || p === null) throw new Error('store: price must be an object of USD per million tokens');
  for (const f of PRICE_FIELDS) {
    const v = p[f];
    if (typeof v !== 'number' || !Number.isFinite(v) || v < 0 || v > 1_000_000) {
      throw new Error(`store: price.${f} must be a number of USD per million tokens from 0 to 1000000, got ${JSON.stringify(v)}`);
    }
  }
  const w = p.webSearch;
  if (w !== undefined && (typeof w !== 'number' || !Number.isFinite(w) || w < 0 || w > 1_000_000)) {
    throw new Error(`store: price.webSearch must be a number of USD per 1,000 searches from 0 to 1000000, got ${JSON.stringify(w)}`);
  }
  if (p.maxOutput !== undefined && !MaxOutputTokens.safeParse(p.maxOutput).success) {
    throw new Error(`store: price.maxOutput must be a whole number of tokens from 1 to ${MAX_OUTPUT_TOKENS_CEILING}, got ${JSON.stringify(p.maxOutput)}`);
  }
  if (p.longContext !== undefined && p.longContext !== null) {
    const lc = LongContextPrice.safeParse(p.longContext);
    if (!lc.success) {
      const issue = lc.error.issues[0];
      throw new Error(`store: price.longContext${issue?.path.length ? '.' + issue.path.join('.') : ''}: ${issue?.message ?? 'invalid'} (long-context rates, USD per million tokens, above aboveInputTokens tokens; or null)`);
    }
  }
}

/** The fields of a stored or given price, copied (no other keys): what is stored and listed. */
function cleanPrice(raw: Record<string, unknown>): ModelPriceRow['price'] {
  const price: ModelPriceRow['price'] = { input: raw.input as number, output: raw.output as number, cacheWrite5m: raw.cacheWrite5m as number, cacheWrite1h: raw.cacheWrite1h as number, cacheRead: raw.cacheRead as number };
  if (typeof raw.webSearch === 'number') price.webSearch = raw.webSearch;
  if (typeof raw.maxOutput === 'number') price.maxOutput = raw.maxOutput;
  const lc = raw.longContext as Record<string, number> | null | undefined;
  if (lc === null) price.longContext = null;
  else if (typeof lc === 'object') {
    price.longContext = { aboveInputTokens: lc.aboveInputTokens!, input: lc.input!, output: lc.output!, cacheWrite5m: lc.cacheWrite5m!, cacheWrite1h: lc.cacheWrite1h!, cacheRead: lc.cacheRead! };
  }
  return price;
}

/** Every price override, model ascending. A row whose JSON is unreadable is skipped (never happens through this module). */
export async function listModelPrices(c: StoreCtx): Promise<ModelPriceRow[]> {
  const rows = await c.db.selectFrom('model_prices').select(['model', 'price', 'updated_at']).orderBy('model').execute();
  const out: ModelPriceRow[] = [];
  for (const r of rows) {
    const raw = (typeof r.price === 'string' ? JSON.parse(r.price) : r.price) as Record<string, unknown>;
    out.push({ model: r.model, price: cleanPrice(raw), updatedAt: num(r.updated_at) });
  }
  return out;
}

/**
 * Creates or replaces the price override of `model` (exact name or a name prefix, as
 * gateway/prices.ts priceFor matches names). `maxOutput` and `longContext` are stored as given:
 * absent stays absent, `longContext: null` stays null.
 * @throws Error naming a bad model name or price field.
 */
export async function setModelPrice(c: StoreCtx, model: string, price: ModelPriceRow['price'], now: number): Promise<ModelPriceRow> {
  assertPattern('model', model);
  if (model.includes('*')) throw new Error(`store: model of a price override must be a name or name prefix without *, got ${JSON.stringify(model)}`);
  assertPrice(price);
  assertInt('now', now, 0);
  const clean = cleanPrice(price);
  const text = JSON.stringify(clean);
  await c.db
    .insertInto('model_prices')
    .values({ model, price: text, updated_at: now })
    .onConflict((oc) => oc.column('model').doUpdateSet({ price: text, updated_at: now }))
    .execute();
  return { model, price: clean, updatedAt: now };
}

/** Deletes the price override of `model`; false when there was none. */
export async function deleteModelPrice(c: StoreCtx, model: string): Promise<boolean> {
  const res = await c.db.deleteFrom('model_prices').where('model', '=', model).executeTakeFirst();
  return Number(res.numDeletedRows) > 0;
}
