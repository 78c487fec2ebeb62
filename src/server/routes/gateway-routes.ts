import type { Hono } from 'hono';
import {
  setModelPriceRequestFor,
  priceRatiosOf,
  SetModelRouteRequest,
  type ModelPriceOverride,
  type ModelRoute,
  type ModelRoutesView,
  type ProviderName,
} from '../../protocol/index.js';
import { providerConfigured, type GatewayConfig } from '../../gateway/config.js';
import { providerSetting } from '../../gateway/errors.js';
import { compareApiRoutes, withOverrides, type ModelDirectory } from '../../gateway/model-directory.js';
import { droppedLongContext, droppedLongContextMessage, inheritedLongContextChanges, longContextPhrase, roundedRates, type PriceOverride } from '../../gateway/price-override.js';
import { tokenPriceFor } from '../../gateway/prices.js';
import { pricesInEffect } from '../../gateway/price-sources.js';
import type { ModelPriceRow, ModelRouteRow } from '../../store/types.js';
import { requireAdmin, type AppEnv } from '../auth.js';
import type { ServerContext } from '../context.js';
import { apiError, readBody } from '../http-util.js';
import { takesQuery } from '../query-rule.js';
import { iso } from '../views.js';

/** What these routes need of the gateway: its configuration (for the configured routes) and the directory to invalidate after a change. */
export interface GatewayRoutesDeps {
  config: GatewayConfig;
  directory: ModelDirectory;
}

/**
 * A route as the API shows it, with a `warning` when this server has no key or URL for its
 * provider (fresh-user finding: such a route was accepted without a word, and every call it
 * took failed `provider_not_configured`).
 */
function routeView(config: GatewayConfig, pattern: string, provider: ProviderName, source: ModelRoute['source'], updatedAt: string | null): ModelRoute {
  const route: ModelRoute = { pattern, provider, source, updatedAt };
  if (!providerConfigured(config, provider)) {
    route.warning = `provider ${provider} is not configured on this server, so the calls this route takes are refused: set ${providerSetting(provider)} in the server's environment and restart it, or route these models to another provider`;
  }
  return route;
}

/** Routes in the order the gateway tries them (gateway/model-directory.ts resolveProvider). */
export function routesInOrder(api: readonly ModelRouteRow[], config: GatewayConfig): ModelRoute[] {
  const apiSpecific = api.filter((r) => r.pattern !== '*').sort((a, b) => compareApiRoutes(a.pattern, b.pattern));
  const conf = config.modelProviders ?? [];
  const view = (r: ModelRouteRow): ModelRoute => routeView(config, r.pattern, r.provider as ProviderName, 'api', iso(r.updatedAt));
  const confView = (r: { pattern: string; provider: ProviderName }): ModelRoute => routeView(config, r.pattern, r.provider, 'config', null);
  return [
    ...apiSpecific.map(view),
    ...conf.filter((r) => r.pattern !== '*').map(confView),
    ...api.filter((r) => r.pattern === '*').map(view),
    ...conf.filter((r) => r.pattern === '*').slice(0, 1).map(confView),
  ];
}

function priceView(p: ModelPriceRow): ModelPriceOverride {
  return { model: p.model, price: p.price, updatedAt: iso(p.updatedAt) };
}

/** Stored API price overrides as [model, override] pairs, as layOverrides takes them. */
const pairs = (rows: readonly ModelPriceRow[]): Array<readonly [string, PriceOverride]> => rows.map((r) => [r.model, r.price] as const);

/**
 * The end of the refusal of a change that would move the long-context rates of API overrides
 * that give none of their own (gateway/price-override.ts inheritedLongContextChanges): names
 * each, its rates now and after, and how to pin them.
 */
function movedMessage(moved: ReturnType<typeof inheritedLongContextChanges>): string {
  const each = moved.map((m) => `${m.model} (${longContextPhrase(m.before)}; then ${longContextPhrase(m.after)})`).join(', ');
  const first = moved[0]!.model;
  return (
    `would change the long-context rates of the API's price of ${each}, which gives none of its own and takes them from the entry it extends: ` +
    `give it its own first (flotilla models price ${first} ... --long-context-above N --long-context-input USD --long-context-output USD, or --no-long-context)`
  );
}

/**
 * Model routes and price overrides of the gateway (issue 3). Members read, admins change;
 * changes are stored (every replica picks them up within gateway/model-directory.ts
 * DIRECTORY_TTL_MS, this one at once). Provider API keys never appear here.
 * - `GET /api/gateway/routes` → {@link ModelRoutesView}: with `pricesInEffect`, every price the
 *   gateway applies other than the table's, flotilla.yaml's and the API's, and where each came
 *   from (gateway/price-sources.ts);
 * - `PUT /api/gateway/routes` {@link SetModelRouteRequest} (admin) → 200 {@link ModelRoute};
 * - `DELETE /api/gateway/routes?pattern=P` (admin) → 204; 404 `not_found` when P has no API
 *   route (configured routes cannot be deleted here); 400 `invalid_request` without `pattern`;
 * - `PUT /api/gateway/prices` {@link SetModelPriceRequest} (admin) → 200 {@link ModelPriceOverride}
 *   (the price as stored: `maxOutput` / `longContext` only when given; cache rates left out
 *   set from the input rate with the ratios of the price table entry the override replaces:
 *   protocol setModelPriceRequestFor). 400 naming
 *   `price.longContext` when it leaves `longContext` out for a model whose entry in the price
 *   table (data/prices.json with flotilla.yaml's prices: `config.prices`) has long-context rates:
 *   it must give its own or `null` (protocol/model-routes.ts ModelPrice says why); and 400
 *   naming `price.longContext` when it would change the long-context rates of another API
 *   override that gives none of its own (price-override.ts inheritedLongContextChanges);
 * - `DELETE /api/gateway/prices?model=M` (admin) → 204; 404 when M has no API override (naming
 *   the config file when it is flotilla.yaml that prices M); 409 `conflict` when the delete
 *   would change such an override's long-context rates.
 * Bad bodies → 400 `invalid_json` / `invalid_request` naming the field.
 */
export function mountGatewayRoutes(app: Hono<AppEnv>, ctx: ServerContext, deps: GatewayRoutesDeps): void {
  app.get('/api/gateway/routes', async (c) => {
    const [routes, prices] = await Promise.all([ctx.store.listModelRoutes(), ctx.store.listModelPrices()]);
    const view: ModelRoutesView = {
      routes: routesInOrder(routes, deps.config),
      prices: prices.map(priceView),
      pricesInEffect: pricesInEffect(deps.config, prices),
      priceTableVersion: deps.config.prices.version,
      configured: routes.length > 0 || (deps.config.modelProviders?.length ?? 0) > 0,
    };
    return c.json(view);
  });

  app.put('/api/gateway/routes', requireAdmin(), async (c) => {
    const body = await readBody(c, SetModelRouteRequest);
    if (!body.ok) return body.response;
    const row = await ctx.store.setModelRoute(body.value.pattern, body.value.provider, ctx.now());
    deps.directory.invalidate();
    ctx.log.info('model route set', { pattern: row.pattern, provider: row.provider, by: c.var.principal.name });
    return c.json(routeView(deps.config, row.pattern, row.provider as ProviderName, 'api', iso(row.updatedAt)));
  });

  app.delete('/api/gateway/routes', requireAdmin(), takesQuery('pattern'), async (c) => {
    const pattern = c.req.query('pattern');
    if (!pattern) return apiError(c, 400, 'invalid_request', 'pattern: the query parameter is required', 'pattern');
    if (!(await ctx.store.deleteModelRoute(pattern))) {
      // a route the configuration sets is not the API's to delete: say where it is (fresh tester: a bare 404)
      const configured = (deps.config.modelProviders ?? []).some((r) => r.pattern === pattern);
      const where = configured ? ': this route is set in the server\'s configuration (flotilla.yaml gateway.models, or FLOTILLA_MODEL_PROVIDERS), which the API does not change; edit it and restart the server, or set an API route for the pattern, which comes first' : '';
      return apiError(c, 404, 'not_found', `no API model route for pattern ${JSON.stringify(pattern)}${where}`, 'pattern');
    }
    deps.directory.invalidate();
    ctx.log.info('model route deleted', { pattern, by: c.var.principal.name });
    return c.body(null, 204);
  });

  app.put('/api/gateway/prices', requireAdmin(), async (c) => {
    // The entry the override replaces: the configured table's, or a shorter name's API override
    // (zeta-mini under zeta: model-directory.ts withOverrides lays them shortest first). Its
    // cache-rate ratios fill the rates left out (gpt-4o reads at input × 0.5).
    const apiPrices = await ctx.store.listModelPrices();
    const shorterApi = (model: string) => apiPrices.filter((r) => r.model.length < model.length);
    const under = (model: string) => withOverrides(deps.config.prices, shorterApi(model));
    const body = await readBody(c, setModelPriceRequestFor((model) => priceRatiosOf(tokenPriceFor(under(model), model))));
    if (!body.ok) return body.response;
    // the table's rates count even while flotilla.yaml prices the model flat (`longContext: null`):
    // the file can change, and the override would then keep them under its own base rates
    // (fresh-tester finding: a call then charged 1,271,250 µ$ instead of 422,000)
    const { model, price } = body.value;
    // ...over the table without the file's prices but with the API's shorter overrides laid: a
    // shorter API override priced flat covers the name whatever the file says (the bare table
    // refused re-pricing claude-sonnet-4-5-mini-latest under an API claude-sonnet-4-5-mini
    // priced flat as soon as any flotilla.yaml existed, blaming the file: a fresh tester)
    const inEffect = droppedLongContext(under(model), model, price);
    const file = deps.config.priceFile;
    const dropped = inEffect ?? (file ? droppedLongContext(withOverrides(file.table, shorterApi(model)), model, price) : null);
    if (dropped) {
      // whose rates: a shorter name's API override's (zeta for zeta-mini), flotilla.yaml's (its
      // claude-sonnet-4-5 for claude-sonnet-4-5-20250929), else the table's — which flotilla.yaml
      // may price flat for now (it said the table priced those calls: a fresh tester)
      const fromApi = apiPrices.find((r) => r.model.length < model.length && r.price.longContext === dropped)?.model;
      const fromFile = Object.entries(deps.config.priceFile?.prices ?? {}).find(([, p]) => p.longContext === dropped)?.[0];
      const flatInFile = inEffect === null && file ? ` ${file.table.version} (${file.file} prices them flat for now; without its entry, or once it changes, these apply)` : '';
      const by = fromApi ? `the API's price of ${fromApi}` : fromFile ? `${deps.config.priceFile!.file}'s price of ${fromFile}` : flatInFile ? `the price table${flatInFile}` : undefined;
      return apiError(c, 400, 'invalid_request', `price.longContext: ${droppedLongContextMessage(model, dropped, by)}`, 'price.longContext');
    }
    const stored = roundedRates(body.value.price);
    const moved = inheritedLongContextChanges(deps.config.prices, pairs(apiPrices), [...pairs(apiPrices.filter((r) => r.model !== model)), [model, stored]]);
    // its own stored rates dropped by a price that leaves them out (a form with only input and
    // output replaced them without a word: a fresh tester), or another override's moved
    const own = moved.find((m) => m.model === model);
    if (own) return apiError(c, 400, 'invalid_request', `price.longContext: ${model}'s price now has long-context rates (${longContextPhrase(own.before)}) and this one gives none, which would make them ${longContextPhrase(own.after)}: give its long-context rates again, or longContext: null (--no-long-context) to drop them`, 'price.longContext');
    if (moved.length) return apiError(c, 400, 'invalid_request', `price.longContext: setting ${model}'s price ${movedMessage(moved)}`, 'price.longContext');
    const row = await ctx.store.setModelPrice(body.value.model, stored, ctx.now());
    deps.directory.invalidate();
    ctx.log.info('model price override set', { model: row.model, by: c.var.principal.name });
    return c.json(priceView(row));
  });

  app.delete('/api/gateway/prices', requireAdmin(), takesQuery('model'), async (c) => {
    const model = c.req.query('model');
    if (!model) return apiError(c, 400, 'invalid_request', 'model: the query parameter is required', 'model');
    const apiPrices = await ctx.store.listModelPrices();
    const moved = inheritedLongContextChanges(deps.config.prices, pairs(apiPrices), pairs(apiPrices.filter((r) => r.model !== model)));
    if (moved.length) return apiError(c, 409, 'conflict', `deleting ${model}'s price ${movedMessage(moved)}`, 'model');
    if (!(await ctx.store.deleteModelPrice(model))) {
      // a price flotilla.yaml sets is not the API's to delete: say where it is (second fresh tester: a bare 404)
      const file = deps.config.priceFile && Object.hasOwn(deps.config.priceFile.prices, model) ? deps.config.priceFile.file : null;
      const where = file ? `: its price is set in ${file} (gateway.prices), which the API does not change; edit the file and restart the server` : '';
      return apiError(c, 404, 'not_found', `no price override set through the API for model ${JSON.stringify(model)}${where}`, 'model');
    }
    deps.directory.invalidate();
    ctx.log.info('model price override deleted', { model, by: c.var.principal.name });
    return c.body(null, 204);
  });
}
