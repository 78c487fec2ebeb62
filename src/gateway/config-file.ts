import { existsSync, readFileSync } from 'node:fs';
import { SettingError, settingFromEnv } from '../core/setting-env.js';
import { resolve } from 'node:path';
import { LineCounter, parseDocument, type Document } from 'yaml';
import { lineAt, refuseNonStringKeys, refuseRepeatedKeys, refuseUnknownSections, refuseUnplainRates } from './config-file-yaml.js';
import { z } from 'zod';
import type { GatewayConfig, ModelRoute } from './config.js';
import { droppedLongContext, droppedLongContextMessage, layOverrides, type PriceOverride } from './price-override.js';
import { LongContextPriceSchema, TablePriceSchema } from './price-schema.js';
import { tokenPriceFor, type PriceTable } from './prices.js';
import { ModelPattern, PriceModelName, priceRatiosOf, ProviderName, withDefaultPriceRates, type PriceRatios } from '../protocol/index.js';
import { cutEcho } from '../protocol/echo.js';

/**
 * A price entry as data/prices.json writes one (price-schema.ts: rates are the API's, protocol
 * UsdRate: 0 to 1,000,000 with at most 6 decimals), unknown keys refused; and
 * `longContext: null` (price every call at the base rates: a model whose table entry has
 * long-context rates must say so, price-override.ts).
 */
const Written = TablePriceSchema.extend({ longContext: LongContextPriceSchema.nullable().optional() });
/**
 * The cache rates, each optional in the file: absent, set from the input rate beside it as the
 * API does (protocol withDefaultPriceRates), with the ratios of the price table entry the
 * override replaces (gpt-4o's cache reads at input × 0.5; × 1.25, × 2, × 0.1 for a model the
 * table does not list).
 */
const optionalCache = {
  cacheWrite5m: TablePriceSchema.shape.cacheWrite5m.optional(),
  cacheWrite1h: TablePriceSchema.shape.cacheWrite1h.optional(),
  cacheRead: TablePriceSchema.shape.cacheRead.optional(),
};
const PriceInput = TablePriceSchema.extend({ ...optionalCache, longContext: LongContextPriceSchema.extend(optionalCache).strict().nullable().optional() }).strict();

/** `gateway.prices`: each entry's left-out cache rates set with `ratiosFor(its model)`, then checked as written prices. */
function pricesSection(ratiosFor: (model: string) => PriceRatios) {
  return z
    .record(PriceModelName, PriceInput)
    .transform((prices, ctx) => {
      const out: Record<string, unknown> = {};
      for (const [model, p] of Object.entries(prices)) out[model] = withDefaultPriceRates(p, ctx, ratiosFor(model), [model]);
      return out;
    })
    .pipe(z.record(z.string(), Written));
}

/**
 * The `gateway:` section of flotilla.yaml (its only section: any other top-level key is refused,
 * see refuseUnknownSections):
 * ```yaml
 * gateway:
 *   models:              # model name or glob → provider; first match wins, "*" = the default
 *     claude-*: anthropic
 *     gpt-*: openai
 *     "*": scripted
 *   prices:              # USD per million tokens, over data/prices.json
 *     my-model: { input: 1, output: 2, cacheWrite5m: 1.25, cacheWrite1h: 2, cacheRead: 0.1 }
 *     short-model: { input: 1, output: 2 }   # cache rates left out: input × the replaced
 *                        # table entry's ratios (gpt-4o reads at × 0.5), × 1.25, × 2, × 0.1 for
 *                        # a model the table does not list
 *     other-model: { input: 1, output: 2, cacheWrite5m: 1, cacheWrite1h: 1, cacheRead: 0.1, webSearch: 10, maxOutput: 32000 }
 *                        # webSearch: USD per 1,000 server-side web searches (optional);
 *                        # maxOutput: the model's maximum output, tokens (optional);
 *                        # longContext: { aboveInputTokens, input, output, cacheWrite5m,
 *                        #   cacheWrite1h, cacheRead } rates past an input size, or null
 * ```
 * The same rules as the API's (protocol model-routes.ts): a route's pattern is a ModelPattern
 * (as `PUT /api/gateway/routes` takes it) and its provider a ProviderName; a price's model is a
 * PriceModelName (letters, digits, `. _ : @ / + -`: no spaces, no `*`) and its rates UsdRates
 * (0 to 1,000,000, at most 6 decimals), as `PUT /api/gateway/prices` takes them; so a file the
 * gateway starts with never holds a price the API would refuse, and the other way round.
 * An entry replaces the table's for that name (price-override.ts overriddenPrice): without
 * `maxOutput` it keeps the table's; a model whose table entry has long-context rates
 * (claude-sonnet-4, claude-sonnet-4-5) needs `longContext` (rates, or null to price flat), else
 * {@link withGatewayFile} refuses the file naming `gateway.prices.<model>.longContext`.
 */
const gatewaySection = (ratiosFor: (model: string) => PriceRatios) =>
  z
    .object({
      models: z.record(ModelPattern, ProviderName).optional(),
      prices: pricesSection(ratiosFor).optional(),
    })
    .strict();

/** What flotilla.yaml says about the gateway. */
export interface GatewayFileConfig {
  /** In file order. */
  routes: ModelRoute[];
  /** As written (USD per million tokens; maxOutput tokens); combined with the table by {@link withGatewayFile}. */
  prices: Record<string, PriceOverride>;
  /** The file's path, for messages. */
  file?: string;
  /** The line of each price's model name in the file (1-based), for messages. */
  priceLines?: Record<string, number>;
}

/**
 * The config file to read: `FLOTILLA_CONFIG` when set (must exist), else `./flotilla.yaml`
 * when it exists, else null.
 * @throws Error when FLOTILLA_CONFIG names a missing file, or is set blank (core/setting-env.ts).
 */
export function configFilePath(env: NodeJS.ProcessEnv, cwd = process.cwd()): string | null {
  const named = settingFromEnv(env, 'FLOTILLA_CONFIG');
  if (named) {
    const p = resolve(cwd, named);
    if (!existsSync(p)) throw new SettingError(`FLOTILLA_CONFIG: no such file ${p}`);
    return p;
  }
  const p = resolve(cwd, 'flotilla.yaml');
  return existsSync(p) ? p : null;
}

/**
 * `file:LINE: gateway.<path>: <message>` for the first problem zod found in the `gateway:`
 * section (`line` finds where, config-file-yaml.ts lineAt); a refused model name or pattern (a
 * record key) is quoted, with why:
 * `flotilla.yaml:3: gateway.prices: the model name "my model" must be 1-200 characters of ...`.
 */
function sectionIssue(file: string, issue: z.core.$ZodIssue | undefined, line: (path: string[], key?: string) => number): string {
  if (!issue) return `${file}: gateway: invalid`;
  const within = issue.path.map(String);
  const path = ['gateway', ...within];
  if (issue.code === 'invalid_key') {
    const key = path.pop() ?? '';
    const what = path[1] === 'models' ? 'model pattern' : 'model name';
    const why = issue.issues[0]?.message ?? 'is invalid';
    // `must not be "default": ...` after `the model name "default"` would say the name twice
    const said = `must not be ${JSON.stringify(key)}`;
    return `${file}:${line(within.slice(0, -1), key)}: ${path.join('.')}: the ${what} ${JSON.stringify(key)} ${why.startsWith(said) ? `is refused${why.slice(said.length)}` : why}`;
  }
  const key = issue.code === 'unrecognized_keys' ? issue.keys[0] : undefined;
  return `${file}:${line(within, key)}: ${path.join('.')}: ${cutEcho(issue.message, 400)}`;
}

/**
 * Reads the `gateway:` section of a flotilla.yaml file (absent section → no routes, no prices),
 * with the API's rules for patterns, providers, model names and rates (see gatewaySection); a
 * price's left-out cache rates take the ratios of `table`'s entry it replaces (the server's
 * price table; without it, Anthropic's).
 * The file's shape is checked first (config-file-yaml.ts: one document, no key given twice, only
 * known sections, names that YAML reads as text).
 * @throws Error naming the file, the line and the bad field: `flotilla.yaml:1: unknown section "gatway" ...`,
 *   `flotilla.yaml:5: the key "a-*" is given twice in one mapping (first on line 3)`,
 *   `flotilla.yaml:3: gateway.models: the model pattern "claude *" must be ...`,
 *   `flotilla.yaml:3: gateway.prices.my-model.input: must have at most 6 decimals ...`,
 *   `flotilla.yaml:4: gateway.prices: the model name 1e3 is read by YAML as the number 1000 ...`.
 */
export function loadGatewayFile(file: string, table?: PriceTable): GatewayFileConfig {
  let doc: unknown;
  const lines = new LineCounter();
  let yaml: Document;
  try {
    // the library's own check of repeated keys is quadratic (20,000 routes: 3 s, 200,000: minutes); ours is one pass
    yaml = parseDocument(readFileSync(file, 'utf8'), { lineCounter: lines, uniqueKeys: false });
    const first = yaml.errors[0];
    // the YAML library's own words are for programmers ("please use YAML.parseAllDocuments()")
    if (first?.code === 'MULTIPLE_DOCS') throw new Error(`${file}:${first.linePos?.[0].line ?? 1}: holds more than one YAML document (a --- line): flotilla.yaml is one`);
    if (first) throw first;
    refuseRepeatedKeys(file, yaml, lines);
    refuseUnknownSections(file, yaml, lines);
    refuseNonStringKeys(file, yaml, lines);
    refuseUnplainRates(file, yaml, lines);
    doc = yaml.toJS();
  } catch (err) {
    const message = (err as Error).message;
    throw new Error(message.startsWith(`${file}:`) ? message : `${file}: ${message}`);
  }
  const section = doc && typeof doc === 'object' ? (doc as Record<string, unknown>).gateway : undefined;
  if (section === undefined || section === null) return { routes: [], prices: {}, file };
  // a list, a scalar, or a tagged value (`!!binary` reads as a Buffer, whose own names zod listed)
  if (typeof section !== 'object' || Array.isArray(section) || Object.getPrototypeOf(section) !== Object.prototype) {
    throw new Error(`${file}:${lineAt(yaml, lines, ['gateway'])}: gateway: must be a mapping (models:, prices:)`);
  }
  const parsed = gatewaySection((model) => priceRatiosOf(table ? tokenPriceFor(table, model) : null)).safeParse(section);
  if (!parsed.success) throw new Error(sectionIssue(file, parsed.error.issues[0], (path, key) => lineAt(yaml, lines, ['gateway', ...path], key)));
  const routes = Object.entries(parsed.data.models ?? {}).map(([pattern, provider]) => ({ pattern, provider }));
  const prices = (parsed.data.prices ?? {}) as Record<string, PriceOverride>;
  const priceLines = Object.fromEntries(Object.keys(prices).map((model) => [model, lineAt(yaml, lines, ['gateway', 'prices'], model)]));
  return { routes, prices, file, priceLines };
}

/**
 * `config` with the file's routes first (then the environment's FLOTILLA_MODEL_PROVIDERS) and
 * its prices laid over the price table, each combined with the entry it replaces
 * (price-override.ts overriddenPrice: a missing `maxOutput` is the table's); when the file has
 * prices, `priceFile` records them as written and the table they replaced entries of.
 * @throws Error naming the file, the entry's line and `gateway.prices.<model>.longContext` when an entry leaves
 *   out `longContext` for a model whose table entry has long-context rates (say them, or null).
 */
export function withGatewayFile(config: GatewayConfig, file: GatewayFileConfig): GatewayConfig {
  const routes = [...file.routes, ...(config.modelProviders ?? [])];
  const prices = layOverrides(config.prices, Object.entries(file.prices), (model, price, under) => {
    const dropped = droppedLongContext(under, model, price);
    const at = file.priceLines?.[model];
    if (!dropped) return;
    // whose rates: a shorter name's entry in this file (zeta for zeta-mini), else the table's
    const from = Object.entries(file.prices).find(([name, p]) => name.length < model.length && p.longContext === dropped)?.[0];
    throw new Error(`${file.file ?? 'flotilla.yaml'}${at ? `:${at}` : ''}: gateway.prices.${model}.longContext: ${droppedLongContextMessage(model, dropped, from ? `gateway.prices.${from}` : undefined)}`);
  });
  const overrides = Object.keys(file.prices).length > 0;
  return {
    ...config,
    ...(routes.length ? { modelProviders: routes } : {}),
    prices,
    // which prices came from the file, for the API's list of prices in effect (price-sources.ts)
    ...(overrides ? { priceFile: { file: file.file ?? 'flotilla.yaml', prices: file.prices, table: config.prices } } : {}),
  };
}

/**
 * The gateway's configuration as `flotilla up` builds it: the environment (config.ts
 * loadGatewayConfig) plus the `gateway:` section of the config file ({@link configFilePath}).
 * @throws SettingError naming the bad variable, or the file and field (a file that cannot be
 *   read or parsed, a price table's error: configuration the server cannot use, as a bad
 *   variable's value is; the CLI exits 2 for both).
 */
export function loadGatewaySettings(env: NodeJS.ProcessEnv, load: (env: NodeJS.ProcessEnv) => GatewayConfig, cwd = process.cwd()): GatewayConfig {
  try {
    const config = load(env);
    const file = configFilePath(env, cwd);
    return file ? withGatewayFile(config, loadGatewayFile(file, config.prices)) : config;
  } catch (err) {
    if (err instanceof SettingError) throw err;
    throw new SettingError((err as Error).message, { cause: err });
  }
}
