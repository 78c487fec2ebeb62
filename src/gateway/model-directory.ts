import type { ModelPriceRow, ModelRouteRow, Store } from '../store/types.js';
import { providerForModel, type ModelRoute, type ProviderName } from './config.js';
import { layOverrides } from './price-override.js';
import type { PriceTable } from './prices.js';

/** The Store methods the directory reads (a full `Store` fits). */
export type DirectoryStore = Pick<Store, 'listModelRoutes' | 'listModelPrices'>;

/** How long routes and prices read from the store are reused before being read again, ms. */
export const DIRECTORY_TTL_MS = 2000;

/** True when glob `pattern` (`*` = any run of characters) matches the whole of `model`. */
export function globMatches(pattern: string, model: string): boolean {
  if (!pattern.includes('*')) return pattern === model;
  const parts = pattern.split('*');
  const first = parts[0]!;
  const last = parts[parts.length - 1]!;
  if (!model.startsWith(first) || model.length < first.length + last.length || !model.endsWith(last)) return false;
  let at = first.length;
  const end = model.length - last.length;
  for (const mid of parts.slice(1, -1)) {
    const i = model.indexOf(mid, at);
    if (i < 0 || i + mid.length > end) return false;
    at = i + mid.length;
  }
  return true;
}

/** How specific a pattern is: exact names first, then globs by their count of literal characters. */
function specificity(pattern: string): number {
  return pattern.includes('*') ? pattern.replace(/\*/g, '').length : Number.MAX_SAFE_INTEGER;
}

/**
 * The order API routes other than `*` are tried in (< 0: `a` first): the more specific first
 * ({@link specificity}), then by UTF-16 code units (`B*B*` before `B*a*`), never by the
 * store's order or a locale's: the gateway and `flotilla models list` (server
 * routes/gateway-routes.ts) share it, and SQLite and PostgreSQL collate text differently
 * (fresh-user finding: the list showed `B*a*` first, the gateway used `B*B*`).
 */
export function compareApiRoutes(a: string, b: string): number {
  return specificity(b) - specificity(a) || (a < b ? -1 : a > b ? 1 : 0);
}

/**
 * The provider for `model` from the API's routes (`api`, stored) over the configuration's
 * (`config`: flotilla.yaml `gateway.models`, then FLOTILLA_MODEL_PROVIDERS). The order:
 * 1. API routes other than `*`: an exact name, else the glob with the most literal characters
 *    (ties: {@link compareApiRoutes});
 * 2. configuration routes other than `*`: the first that matches, in file order;
 * 3. the API's default (route `*`); 4. the configuration's default (`*`);
 * 5. no route anywhere: `fallback` (the wire format's own provider);
 * 6. else null (an unknown model).
 */
export function resolveProvider(api: readonly ModelRouteRow[], config: readonly ModelRoute[] | undefined, model: string, fallback: ProviderName): ProviderName | null {
  let best: ModelRouteRow | null = null;
  for (const r of api) {
    if (r.pattern === '*' || !globMatches(r.pattern, model)) continue;
    if (!best || compareApiRoutes(r.pattern, best.pattern) < 0) best = r;
  }
  if (best) return best.provider as ProviderName;
  const specific = (config ?? []).filter((r) => r.pattern !== '*');
  for (const r of specific) if (globMatches(r.pattern, model)) return r.provider;
  const apiDefault = api.find((r) => r.pattern === '*');
  if (apiDefault) return apiDefault.provider as ProviderName;
  const configDefault = (config ?? []).find((r) => r.pattern === '*');
  if (configDefault) return configDefault.provider;
  if (api.length === 0 && (config ?? []).length === 0) return providerForModel(undefined, model, fallback);
  return null;
}

/**
 * `table` with the API's price overrides laid over its models (same name matching as priceFor),
 * each combined with the entry it replaces by price-override.ts layOverrides (the table's, or a
 * shorter name's override: `zeta-mini` beside `zeta`) and overriddenPrice: an override
 * without `maxOutput` keeps the table's; `longContext: null` prices flat; one that says nothing
 * of `longContext` (stored before the API took it) keeps the table's.
 */
export function withOverrides(table: PriceTable, overrides: readonly ModelPriceRow[]): PriceTable {
  return layOverrides(table, overrides.map((o) => [o.model, o.price] as const));
}

/**
 * Model routes and prices as the gateway sees them: the configuration's, overlaid with what
 * was set through the API (stored, so every replica agrees). The stored part is read at most
 * once per {@link DIRECTORY_TTL_MS} (one read in flight at a time), so a change made on
 * another replica applies within that time; {@link invalidate} (called by this process's API
 * after a change) makes the next call read it at once. A failed read keeps the last good
 * copy (or none) and is retried on the next call.
 */
export class ModelDirectory {
  private cached: { routes: ModelRouteRow[]; prices: PriceTable; at: number } | null = null;
  private loading: Promise<void> | null = null;

  constructor(
    private readonly store: DirectoryStore | null,
    private readonly configRoutes: readonly ModelRoute[] | undefined,
    private readonly configPrices: PriceTable,
    private readonly ttlMs = DIRECTORY_TTL_MS,
    private readonly clock: () => number = Date.now,
  ) {}

  /** Forget the stored routes and prices; the next lookup reads them again. */
  invalidate(): void {
    this.cached = null;
  }

  private async current(): Promise<{ routes: ModelRouteRow[]; prices: PriceTable }> {
    const c = this.cached;
    if (c && this.clock() - c.at < this.ttlMs) return c;
    if (!this.store) return { routes: [], prices: this.configPrices };
    this.loading ??= (async () => {
      try {
        const [routes, prices] = await Promise.all([this.store!.listModelRoutes(), this.store!.listModelPrices()]);
        this.cached = { routes, prices: withOverrides(this.configPrices, prices), at: this.clock() };
      } finally {
        this.loading = null;
      }
    })();
    try {
      await this.loading;
    } catch {
      if (c) return c;
      return { routes: [], prices: this.configPrices };
    }
    return this.cached ?? { routes: [], prices: this.configPrices };
  }

  /** The provider for `model` ({@link resolveProvider}); null = unknown model. */
  async providerFor(model: string, fallback: ProviderName): Promise<ProviderName | null> {
    const { routes } = await this.current();
    return resolveProvider(routes, this.configRoutes, model, fallback);
  }

  /**
   * The provider of the default route (`*`: the API's, else the configuration's), or `fallback`
   * when neither is set: the server's default provider, which a call naming no readable model is
   * recorded against (refused-model.ts).
   */
  async defaultProvider(fallback: ProviderName): Promise<ProviderName> {
    const { routes } = await this.current();
    const api = routes.find((r) => r.pattern === '*');
    if (api) return api.provider as ProviderName;
    return this.configRoutes?.find((r) => r.pattern === '*')?.provider ?? fallback;
  }

  /** The price table with the API's overrides (USD per million tokens). */
  async prices(): Promise<PriceTable> {
    return (await this.current()).prices;
  }

  /**
   * The model names this gateway knows (the price table's, with flotilla.yaml's and the API's
   * prices, and every route pattern without a `*`), each with the provider it resolves to
   * ({@link resolveProvider}, `fallback` when no route is set); names no route matches are
   * left out. In code-point order of the name. Also the price table's `version` (a date).
   */
  async knownModels(fallback: ProviderName): Promise<{ version: string; models: Array<{ id: string; provider: ProviderName }> }> {
    const { routes, prices } = await this.current();
    const names = new Set(Object.keys(prices.models));
    for (const r of [...routes, ...(this.configRoutes ?? [])]) if (!r.pattern.includes('*')) names.add(r.pattern);
    const models: Array<{ id: string; provider: ProviderName }> = [];
    for (const id of [...names].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))) {
      const provider = resolveProvider(routes, this.configRoutes, id, fallback);
      if (provider !== null) models.push({ id, provider });
    }
    return { version: prices.version, models };
  }

  /**
   * {@link providerFor} and {@link prices} from one copy of the routes and prices: at once (no
   * promise, no await on the gateway's per-call path) while the stored copy is fresh or there
   * is no store, else once it has been read.
   */
  lookup(model: string, fallback: ProviderName): ModelLookup | Promise<ModelLookup> {
    const c = this.cached;
    if (c && this.clock() - c.at < this.ttlMs) return { provider: resolveProvider(c.routes, this.configRoutes, model, fallback), prices: c.prices };
    if (!this.store) return { provider: resolveProvider([], this.configRoutes, model, fallback), prices: this.configPrices };
    return this.current().then((cur) => ({ provider: resolveProvider(cur.routes, this.configRoutes, model, fallback), prices: cur.prices }));
  }
}

/** What {@link ModelDirectory.lookup} finds for a model: its provider (null = unknown model) and the price table. */
export interface ModelLookup {
  provider: ProviderName | null;
  prices: PriceTable;
}
