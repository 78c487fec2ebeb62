import type { KeptPriceField, ModelPrice, PriceInEffect } from '../protocol/index.js';
import type { ModelPriceRow } from '../store/types.js';
import type { GatewayConfig } from './config.js';
import { withOverrides } from './model-directory.js';
import { layOverrides, type PriceOverride } from './price-override.js';
import { listedPrice, priceFor, tokenPriceFor, type PriceTable, type TablePrice } from './prices.js';

const KEPT: readonly KeptPriceField[] = ['webSearch', 'maxOutput', 'longContext'];

/** The name `table` lists `entry` under (by identity), or null for its default entry (or an entry it does not hold). */
function nameOf(table: PriceTable, entry: TablePrice): string | null {
  if (entry === table.default) return null;
  for (const [name, p] of Object.entries(table.models)) if (p === entry) return name;
  return null;
}

/**
 * Every price the gateway applies other than the price table's own (protocol PriceInEffect),
 * worked out with the gateway's own functions, not a copy of its rules: the table the gateway
 * prices calls with is `withOverrides(config.prices, api)` (model-directory.ts, as
 * ModelDirectory builds it; `config.prices` already holds flotilla.yaml's prices, laid by
 * config-file.ts withGatewayFile), and a name's price is `priceFor` of it (prices.ts, as each
 * call is priced). One row per name overridden in flotilla.yaml (`config.priceFile`) or
 * through the API (`api`, the stored rows), whichever the gateway uses: an API override of a
 * name the file also prices wins. Rows in order: flotilla.yaml's (file order) then the API's
 * (as listed), a name once.
 * @param config the gateway's configuration (USD per million tokens).
 * @param api the price overrides set through the API (store listModelPrices).
 * @returns the rows; empty when neither overrides any price.
 */
export function pricesInEffect(config: GatewayConfig, api: readonly ModelPriceRow[]): PriceInEffect[] {
  const file = config.priceFile;
  const filePrices = file?.prices ?? {};
  const inEffect = withOverrides(config.prices, api);
  const apiByName = new Map(api.map((r) => [r.model, r]));
  const names = [...new Set([...Object.keys(filePrices), ...api.map((r) => r.model)])];
  return names.map((model) => {
    const fromApi = apiByName.get(model);
    // whose entry the gateway's table holds for the name: the API's when withOverrides laid it
    // over config.prices' (flotilla.yaml's, if any)
    const byApi = fromApi !== undefined && listedPrice(inEffect, model) !== listedPrice(config.prices, model);
    const written: PriceOverride = byApi ? fromApi.price : filePrices[model]!;
    // the entry the override replaced, as layOverrides found it (tokenPriceFor over the table
    // with the shorter names of its own kind laid: zeta-mini's is the zeta override, if any)
    const shorter = (name: string) => name.length < model.length;
    const under = byApi
      ? withOverrides(config.prices, api.filter((r) => shorter(r.model)))
      : layOverrides(file?.table ?? config.prices, Object.entries(filePrices).filter(([name]) => shorter(name)));
    const replacedName = nameOf(under, tokenPriceFor(under, model));
    // who set that entry: a shorter API override (for an API override), else flotilla.yaml
    // (for an API override, also the file's own entry of the same name), else the table
    const from = (name: string | null): PriceInEffect['replaces']['source'] => {
      if (name === null) return 'table';
      if (byApi && shorter(name) && apiByName.has(name)) return 'api';
      const inFile = file !== undefined && Object.hasOwn(filePrices, name);
      return inFile && (byApi || shorter(name)) ? 'flotilla.yaml' : 'table';
    };
    const charged = priceFor(inEffect, model);
    const price: ModelPrice = { input: charged.input, output: charged.output, cacheWrite5m: charged.cacheWrite5m, cacheWrite1h: charged.cacheWrite1h, cacheRead: charged.cacheRead };
    if (charged.webSearch !== undefined) price.webSearch = charged.webSearch;
    if (charged.maxOutput !== undefined) price.maxOutput = charged.maxOutput;
    if (charged.longContext) price.longContext = charged.longContext;
    else if (written.longContext === null) price.longContext = null;
    return {
      model,
      price,
      source: byApi ? 'api' : 'flotilla.yaml',
      updatedAt: byApi ? new Date(fromApi.updatedAt).toISOString() : null, // ISO-8601 from epoch ms
      replaces: { source: from(replacedName), model: replacedName },
      kept: KEPT.filter((k) => written[k] === undefined && price[k] !== undefined && price[k] !== null),
    };
  });
}
