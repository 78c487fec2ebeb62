import { Command, InvalidArgumentError, Option } from 'commander';
import { ApiError, type FlotillaClient } from '../../client/index.js';
import { MAX_LONG_CONTEXT_ABOVE, MAX_OUTPUT_TOKENS_CEILING, ModelPattern, PriceModelName, ProviderName, type ModelPrice, type ModelPriceInput, type ModelPriceOverride, type ModelRoutesView, type PriceInEffect } from '../../protocol/index.js';
import type { z } from 'zod';
import type { CliContext } from '../context.js';
import { formatTable } from '../format.js';
import { addClientOptions, CliError, clientFrom, intIn, usdArg, wantsJson, type ClientOptions } from '../options.js';

function pattern(text: string): string {
  const r = ModelPattern.safeParse(text);
  if (!r.success) throw new InvalidArgumentError(`model pattern ${r.error.issues[0]?.message ?? 'is invalid'}`);
  return text;
}

/** `models price MODEL`: a protocol PriceModelName (the API's own rule), refused before any request (exit 2). */
function priceModel(text: string): string {
  // an override named "default" stored before the name was refused can still be deleted (checked in the action)
  if (text === 'default') return text;
  const r = PriceModelName.safeParse(text);
  if (!r.success) throw new InvalidArgumentError(`model ${r.error.issues[0]?.message ?? 'is invalid'}`);
  return text;
}

function provider(text: string): ProviderName {
  const r = ProviderName.safeParse(text);
  if (!r.success) throw new InvalidArgumentError(`provider must be one of ${ProviderName.options.join(', ')}`);
  return r.data;
}

/** A price flag: USD `per` million tokens (or per 1,000 searches), 0 to 1,000,000, a plain decimal (options.ts usdArg). */
function usdPerMTok(flag: string, per = 'per million tokens'): (text: string) => number {
  return usdArg(flag, { what: `USD ${per} (a number from 0 to 1000000)`, min: 0, max: 1_000_000 });
}


/** `cache write 2.5/4` and the like: a rate set as the CLI and the table list it. */
function rates(p: { input: number; output: number; cacheWrite5m: number; cacheWrite1h: number; cacheRead: number }): string {
  return `input ${p.input}, output ${p.output}, cache write ${p.cacheWrite5m}/${p.cacheWrite1h}, cache read ${p.cacheRead}`;
}

/**
 * What a price override says beyond its token rates, as phrases: web searches (USD per 1,000),
 * maximum output (tokens; absent: the table's), long-context rates (USD per million tokens
 * above a number of input-side tokens; `null`: none, every call at the base rates). Empty when
 * it says none of them.
 */
export function describePriceExtras(p: ModelPrice): string[] {
  const parts: string[] = [];
  if (p.webSearch !== undefined) parts.push(`web search ${p.webSearch} USD per 1,000`);
  if (p.maxOutput !== undefined) parts.push(`max output ${p.maxOutput} tokens`);
  if (p.longContext === null) parts.push('no long-context rates (every call at the base rates)');
  else if (p.longContext) parts.push(`long context above ${p.longContext.aboveInputTokens} input-side tokens: ${rates(p.longContext)}`);
  return parts;
}

/** The fields a price in effect kept from the entry it replaced, as the human output says them. */
const KEPT_WORDS: Record<PriceInEffect['kept'][number], string> = { webSearch: 'web search', maxOutput: 'max output', longContext: 'long-context rates' };

/** `table 2026-12-02 claude-sonnet-4-5`, `table 2026-12-02 default`, `flotilla.yaml qwen3`: the entry a price in effect replaced. */
function replacedLabel(r: PriceInEffect['replaces'], tableVersion: string): string {
  return r.source === 'table' ? `table ${tableVersion} ${r.model ?? 'default'}` : `${r.source} ${r.model ?? ''}`.trim();
}

/**
 * Human-readable lines for a {@link ModelRoutesView}: the routes in the order tried, then the
 * `warning: route P: ...` for each route whose provider this server has not configured, then the
 * prices in effect other than the table's (`pricesInEffect`: rates USD per million tokens,
 * SOURCE `flotilla.yaml` or `api`, the entry each REPLACES; web search, maximum output and
 * long-context rates below the table, with those kept from the replaced entry named).
 */
export function describeRoutes(v: ModelRoutesView): string {
  const lines: string[] = [];
  if (!v.configured) lines.push('no model routes: every model goes to the provider of its wire format (Messages → anthropic or scripted; OpenAI formats → openai, openai-compatible or scripted)');
  else lines.push(formatTable(['PATTERN', 'PROVIDER', 'SOURCE', 'UPDATED'], v.routes.map((r) => [r.pattern === '*' ? '* (default)' : r.pattern, r.provider, r.source, r.updatedAt ?? '-'])));
  if (v.configured && !v.routes.some((r) => r.pattern === '*')) lines.push('no default route: a model no pattern matches is refused as unknown');
  for (const r of v.routes) if (r.warning) lines.push(`warning: route ${r.pattern}: ${r.warning}`);
  const rows = v.pricesInEffect;
  lines.push(`prices: table ${v.priceTableVersion}${rows.length ? ' for models not below; overrides in effect (USD per million tokens; api over flotilla.yaml over table):' : ', no overrides'}`);
  if (rows.length) {
    lines.push(
      formatTable(
        ['MODEL', 'INPUT', 'OUTPUT', 'CACHE-WRITE-5M', 'CACHE-WRITE-1H', 'CACHE-READ', 'SOURCE', 'REPLACES'],
        rows.map((p) => [p.model, String(p.price.input), String(p.price.output), String(p.price.cacheWrite5m), String(p.price.cacheWrite1h), String(p.price.cacheRead), p.source, replacedLabel(p.replaces, v.priceTableVersion)]),
      ),
    );
    // web search, maximum output and long-context rates, and which came with the replaced entry
    for (const p of rows) {
      const extras = describePriceExtras(p.price);
      if (p.kept.length) extras.push(`${p.kept.map((k) => KEPT_WORDS[k]).join(', ')} kept from ${replacedLabel(p.replaces, v.priceTableVersion)}`);
      if (extras.length) lines.push(`  ${p.model}: ${extras.join('; ')}`);
    }
  }
  return lines.join('\n');
}

/** Options of `models price` that are not price settings: the client's, and --delete itself. */
const NOT_PRICE_SETTINGS = new Set(['server', 'token', 'data', 'json', 'delete']);

/**
 * The price settings of `models price` (`cmd`) that were given, on the command line (`--input`)
 * or by their variable (`--input (FLOTILLA_PRICE_INPUT)`), in the command's order: what
 * `--delete` conflicts with. A boolean variable set to 0/false/no does not count (main.ts
 * applyBooleanEnv has turned it back off).
 */
export function priceSettingsGiven(cmd: Command): string[] {
  const given: string[] = [];
  for (const o of cmd.options) {
    const key = o.attributeName();
    if (NOT_PRICE_SETTINGS.has(key)) continue;
    const from = cmd.getOptionValueSource(key);
    if (from === 'cli') given.push(o.long ?? o.flags);
    else if (from === 'env') given.push(`${o.long ?? o.flags} (${o.envVar})`);
  }
  return given;
}

/**
 * Deletes the API price override of `model`. When there is none but the model's price comes
 * from the server's flotilla.yaml (GET /api/gateway/routes `pricesInEffect`, `source`), says so:
 * only API overrides can be deleted.
 * @throws CliError (exit 1, code `not_found`) for a flotilla.yaml price; the API's error otherwise.
 */
async function deletePriceOverride(client: FlotillaClient, model: string): Promise<void> {
  try {
    await client.deleteModelPrice(model);
  } catch (err) {
    if (!(err instanceof ApiError) || err.status !== 404) throw err;
    const view = await client.listModelRoutes().catch(() => null);
    if (view?.pricesInEffect.some((p) => p.model === model && p.source === 'flotilla.yaml')) {
      throw new CliError(
        `no API price override for model ${JSON.stringify(model)}: its price comes from the server's flotilla.yaml (gateway.prices), which \`flotilla models price --delete\` cannot change; only overrides set through the API (\`flotilla models price\`) can be deleted: edit flotilla.yaml and restart the server, or set an override over it`,
        1,
        'not_found',
      );
    }
    throw err;
  }
}

/**
 * `flotilla models ...`: the gateway's model routes and price overrides (issue 3).
 * - `models list` (default): routes in the order tried, and every price in effect other than
 *   the table's — flotilla.yaml's and the API's, with where each came from (members may read);
 * - `models set PATTERN PROVIDER` (admin): route model names matching PATTERN (exact name or
 *   glob like `claude-*`) to PROVIDER; `models default PROVIDER` = `models set '*' PROVIDER`;
 * - `models delete PATTERN` (admin): remove an API route;
 * - `models price MODEL --input --output [--cache-write-5m --cache-write-1h --cache-read]`
 *   (admin; USD per million tokens; cache prices left out are set by the server: input × the
 *   ratios of the table entry the override replaces, × 1.25, × 2, × 0.1 for Claude and unlisted
 *   models, gpt-4o reads × 0.5; env FLOTILLA_PRICE_INPUT, ...), and optionally `--web-search` (USD per
 *   1,000 searches), `--max-output` (tokens; absent: the price table's for the model), long-context
 *   rates `--long-context-above TOKENS --long-context-input --long-context-output
 *   [--long-context-cache-write-5m --long-context-cache-write-1h --long-context-cache-read]`
 *   (cache rates default by the same ratios) or `--no-long-context` (every call at the base
 *   rates). A model whose price table entry has long-context rates (claude-sonnet-4-5) needs one
 *   of the two: the API refuses an override that would drop them unsaid (protocol ModelPrice).
 *   `models price MODEL --delete` removes the API override (with any price flag or its variable:
 *   exit 2, nothing deleted; a model priced by flotilla.yaml only: says that file sets it).
 * Every subcommand takes --server/--token/--data/--json (FLOTILLA_SERVER, ...). Exit 0 on
 * success; 1 on an API error (not an admin, unknown pattern, bad value: the message names it).
 */
export function registerModels(program: Command, ctx: CliContext): void {
  const out = (s: string) => ctx.io.stdout.write(s + '\n');
  const models = program.command('models').description('model routes (model name → provider) and price overrides of the gateway');

  addClientOptions(models.command('list', { isDefault: true }).description('routes in the order tried, and the prices in effect with where each comes from')).action(async (opts: ClientOptions, self: Command) => {
    const view = await (await clientFrom(opts)).listModelRoutes();
    out(wantsJson(self, opts) ? JSON.stringify(view) : describeRoutes(view));
  });

  const set = async (pat: string, prov: ProviderName, opts: ClientOptions, self: Command) => {
    const client = await clientFrom(opts);
    const route = await client.setModelRoute(pat, prov);
    out(wantsJson(self, opts) ? JSON.stringify(route) : `route set: ${route.pattern === '*' ? '* (default)' : route.pattern} → ${route.provider}`);
    if (route.warning && !wantsJson(self, opts)) ctx.io.stderr.write(`warning: ${route.warning}\n`);
    // Once routes exist, a model no route matches is refused: say so when there is no default.
    // (every pattern named: the file's and the API's, not only the one just set, fresh-tester finding)
    const routes = (await client.listModelRoutes()).routes;
    if (pat !== '*' && !routes.some((r) => r.pattern === '*')) {
      const patterns = routes.map((r) => r.pattern);
      const named = patterns.length > 8 ? `${patterns.slice(0, 8).join(', ')}, … (${patterns.length} in all)` : patterns.join(', ');
      ctx.io.stderr.write(`warning: no default route: a model matching none of the routes (${named}) is refused as unknown; set one with \`flotilla models default PROVIDER\`\n`);
    }
  };
  addClientOptions(
    models
      .command('set')
      .description('route model names matching PATTERN (exact, or a glob like claude-*) to PROVIDER (admin)')
      .argument('<pattern>', 'model name or glob; * alone is the default', pattern)
      .argument('<provider>', ProviderName.options.join(' | '), provider),
  ).action((pat: string, prov: ProviderName, opts: ClientOptions, self: Command) => set(pat, prov, opts, self));
  addClientOptions(
    models
      .command('default')
      .description('the provider of models no other route matches (admin)')
      .argument('<provider>', ProviderName.options.join(' | '), provider),
  ).action((prov: ProviderName, opts: ClientOptions, self: Command) => set('*', prov, opts, self));

  addClientOptions(models.command('delete').description('remove an API route (admin)').argument('<pattern>', 'the pattern as set', pattern)).action(async (pat: string, opts: ClientOptions, self: Command) => {
    await (await clientFrom(opts)).deleteModelRoute(pat);
    out(wantsJson(self, opts) ? JSON.stringify({ deleted: pat }) : `route deleted: ${pat}`);
  });

  type PriceOpts = ClientOptions & {
    input?: number;
    output?: number;
    cacheWrite5m?: number;
    cacheWrite1h?: number;
    cacheRead?: number;
    webSearch?: number;
    maxOutput?: number;
    longContextAbove?: number;
    longContextInput?: number;
    longContextOutput?: number;
    longContextCacheWrite5m?: number;
    longContextCacheWrite1h?: number;
    longContextCacheRead?: number;
    /** false: --no-long-context. */
    longContext: boolean;
    delete?: boolean;
  };
  addClientOptions(
    models
      .command('price')
      .description('override the price of a model, USD per million tokens (admin)')
      .argument('<model>', 'model name (matched like the price table: also its dated snapshots, -latest or :latest, and names adding chat, codex, mini, nano or vN; an Ollama tag such as qwen3:8b is a name of its own)', priceModel)
      .addOption(new Option('--input <usd>', 'input tokens').env('FLOTILLA_PRICE_INPUT').argParser(usdPerMTok('--input')))
      .addOption(new Option('--output <usd>', 'output tokens').env('FLOTILLA_PRICE_OUTPUT').argParser(usdPerMTok('--output')))
      .addOption(new Option('--cache-write-5m <usd>', 'cache writes, 5-minute (default: input × the replaced table entry\'s ratio, 1.25 for Claude and unlisted models)').env('FLOTILLA_PRICE_CACHE_WRITE_5M').argParser(usdPerMTok('--cache-write-5m')))
      .addOption(new Option('--cache-write-1h <usd>', 'cache writes, 1-hour (default: input × the replaced entry\'s ratio, 2 for Claude and unlisted models)').env('FLOTILLA_PRICE_CACHE_WRITE_1H').argParser(usdPerMTok('--cache-write-1h')))
      .addOption(new Option('--cache-read <usd>', 'cache reads (default: input × the replaced entry\'s ratio: 0.1 for Claude and unlisted models, 0.5 for gpt-4o)').env('FLOTILLA_PRICE_CACHE_READ').argParser(usdPerMTok('--cache-read')))
      .addOption(new Option('--web-search <usd-per-1000>', "server-side web searches, USD per 1,000 (default: the price table's for the model, else its default entry's)").env('FLOTILLA_PRICE_WEB_SEARCH').argParser(usdPerMTok('--web-search', 'per 1,000 searches')))
      .addOption(new Option('--max-output <tokens>', "the model's maximum output per call, tokens: no call is reserved or charged for more (default: the price table's for the model)").env('FLOTILLA_PRICE_MAX_OUTPUT').argParser(intIn(1, MAX_OUTPUT_TOKENS_CEILING, '--max-output')))
      .addOption(new Option('--long-context-above <tokens>', 'long-context rates: for every token of a call whose input + cache write + cache read tokens are above this (with --long-context-input and --long-context-output)').env('FLOTILLA_PRICE_LONG_CONTEXT_ABOVE').argParser(intIn(1, MAX_LONG_CONTEXT_ABOVE, '--long-context-above')))
      .addOption(new Option('--long-context-input <usd>', 'long-context input tokens').env('FLOTILLA_PRICE_LONG_CONTEXT_INPUT').argParser(usdPerMTok('--long-context-input')))
      .addOption(new Option('--long-context-output <usd>', 'long-context output tokens').env('FLOTILLA_PRICE_LONG_CONTEXT_OUTPUT').argParser(usdPerMTok('--long-context-output')))
      .addOption(new Option('--long-context-cache-write-5m <usd>', 'long-context cache writes, 5-minute (default: long-context input × the replaced entry\'s long-context ratio, 1.25)').env('FLOTILLA_PRICE_LONG_CONTEXT_CACHE_WRITE_5M').argParser(usdPerMTok('--long-context-cache-write-5m')))
      .addOption(new Option('--long-context-cache-write-1h <usd>', 'long-context cache writes, 1-hour (default: long-context input × the replaced entry\'s ratio, 2)').env('FLOTILLA_PRICE_LONG_CONTEXT_CACHE_WRITE_1H').argParser(usdPerMTok('--long-context-cache-write-1h')))
      .addOption(new Option('--long-context-cache-read <usd>', 'long-context cache reads (default: long-context input × the replaced entry\'s ratio, 0.1)').env('FLOTILLA_PRICE_LONG_CONTEXT_CACHE_READ').argParser(usdPerMTok('--long-context-cache-read')))
      .addOption(new Option('--no-long-context', "no long-context rates: every call at the base rates (needed to drop the price table's, e.g. claude-sonnet-4-5's above 200,000 tokens)").env('FLOTILLA_PRICE_NO_LONG_CONTEXT'))
      .addOption(new Option('--delete', 'remove the override instead').env('FLOTILLA_PRICE_DELETE')),
  ).action(async (model: string, opts: PriceOpts, self: Command) => {
    if (opts.delete) {
      // `--input 3 --output 4 --delete` deleted the override the user meant to set.
      const conflicting = priceSettingsGiven(self);
      if (conflicting.length) {
        // named as given: from FLOTILLA_PRICE_DELETE, the message named a flag the user never typed (fresh tester)
        const del = self.getOptionValueSource('delete') === 'env' ? '--delete (FLOTILLA_PRICE_DELETE)' : '--delete';
        throw new CliError(`models price: ${del} cannot go with ${conflicting.join(', ')}: --delete removes the override of ${JSON.stringify(model)}, those set a price; give one or the other (nothing was deleted)`, 2);
      }
      const client = await clientFrom(opts);
      await deletePriceOverride(client, model);
      return void out(wantsJson(self, opts) ? JSON.stringify({ deleted: model }) : `price override deleted: ${model}`);
    }
    const named = PriceModelName.safeParse(model);
    if (!named.success) throw new CliError(`models price: model ${named.error.issues[0]?.message ?? "is invalid"}`, 2);
    // a usage error before any server is asked (it said no API token first)
    if (opts.input === undefined || opts.output === undefined) throw new CliError('models price: --input and --output are required (USD per million tokens; or FLOTILLA_PRICE_INPUT and FLOTILLA_PRICE_OUTPUT), or --delete (FLOTILLA_PRICE_DELETE)', 2);
    const client = await clientFrom(opts);
    const longFlags = [opts.longContextAbove, opts.longContextInput, opts.longContextOutput, opts.longContextCacheWrite5m, opts.longContextCacheWrite1h, opts.longContextCacheRead];
    const anyLong = longFlags.some((v) => v !== undefined);
    if (anyLong && !opts.longContext) throw new CliError('models price: --no-long-context cannot go with --long-context-* rates: give the rates or no long-context rates', 2);
    let longContext: PriceRequest['longContext'];
    if (!opts.longContext) longContext = null;
    else if (anyLong) {
      if (opts.longContextAbove === undefined || opts.longContextInput === undefined || opts.longContextOutput === undefined) {
        throw new CliError('models price: long-context rates need --long-context-above (tokens), --long-context-input and --long-context-output (USD per million tokens)', 2);
      }
      longContext = {
        aboveInputTokens: opts.longContextAbove,
        input: opts.longContextInput,
        output: opts.longContextOutput,
        ...given({ cacheWrite5m: opts.longContextCacheWrite5m, cacheWrite1h: opts.longContextCacheWrite1h, cacheRead: opts.longContextCacheRead }),
      };
    }
    // cache rates left out are the server's to set: from the ratios of the price table entry
    // the override replaces (protocol setModelPriceRequestFor), which only the server knows
    const price: PriceRequest = {
      input: opts.input,
      ...given({ cacheWrite5m: opts.cacheWrite5m, cacheWrite1h: opts.cacheWrite1h, cacheRead: opts.cacheRead }),
      output: opts.output,
      ...(opts.webSearch !== undefined ? { webSearch: opts.webSearch } : {}),
      ...(opts.maxOutput !== undefined ? { maxOutput: opts.maxOutput } : {}),
      ...(longContext !== undefined ? { longContext } : {}),
    };
    let row: ModelPriceOverride;
    try {
      row = await client.setModelPrice(model, price);
    } catch (err) {
      // a left-out rate whose default is past the most: name its flag, as a default (not "too big"), each part its own
      if (err instanceof ApiError && /^price\.(longContext\.)?(cacheWrite5m|cacheWrite1h|cacheRead)$/.test(err.field ?? '') && err.message.includes('left out, it defaults')) {
        const parts = err.message.split('; ').map((part) => {
          const m = /^(?:price\.)?(longContext\.)?(cacheWrite5m|cacheWrite1h|cacheRead): (.*)give \w+$/.exec(part);
          if (!m) return part;
          const flag = `--${m[1] ? 'long-context-' : ''}${FLAG_OF[m[2] as keyof typeof FLAG_OF]}`;
          return `${flag}: ${m[3]}give ${flag}`;
        });
        throw new CliError(`models price: ${parts.join('; ')}`, 2);
      }
      // The table has long-context rates for this model: say which flags decide.
      if (err instanceof ApiError && err.field === 'price.longContext' && longContext === undefined) {
        throw new ApiError(err.status, err.code, `${err.message} (flags: --long-context-above TOKENS --long-context-input USD --long-context-output USD, or --no-long-context)`, err.field);
      }
      throw err;
    }
    const extras = describePriceExtras(row.price);
    if (row.price.maxOutput === undefined) {
      const kept = await keptMaxOutput(client, row.model);
      if (kept) extras.push(kept);
    }
    out(wantsJson(self, opts) ? JSON.stringify(row) : `price override set: ${row.model} ${rates(row.price)} USD per million tokens${extras.map((e) => '; ' + e).join('')}`);
  });
}

/** A price as `PUT /api/gateway/prices` takes it (cache rates optional: protocol ModelPriceInput). */
type PriceRequest = z.input<typeof ModelPriceInput>;

/** The flag (without `--`, nor `long-context-`) of each cache rate. */
const FLAG_OF = { cacheWrite5m: 'cache-write-5m', cacheWrite1h: 'cache-write-1h', cacheRead: 'cache-read' } as const;

/** The cache rates given (a flag left out is not sent: the server sets it). */
function given(rates: Partial<Record<keyof typeof FLAG_OF, number | undefined>>): Partial<Record<keyof typeof FLAG_OF, number>> {
  const out: Partial<Record<keyof typeof FLAG_OF, number>> = {};
  for (const k of Object.keys(FLAG_OF) as (keyof typeof FLAG_OF)[]) if (rates[k] !== undefined) out[k] = rates[k];
  return out;
}

/**
 * What the price override just set for `model` keeps of the entry it replaces for its maximum
 * output, as `GET /api/gateway/routes` `pricesInEffect` says: `max output 64000 tokens as in
 * the price table` ("flotilla.yaml", or "the API's price of NAME" for a shorter name the API
 * prices: zeta-mini under zeta); null when that entry has none (it said "max output as in
 * flotilla.yaml" for an entry without one: a fresh tester) or the view cannot be read (the
 * override was set: its confirmation must not fail on this).
 */
async function keptMaxOutput(client: { listModelRoutes(): Promise<{ pricesInEffect?: Array<{ model: string; source: string; price: { maxOutput?: number }; kept: string[]; replaces: { source: string; model: string | null } }> }> }, model: string): Promise<string | null> {
  try {
    const view = await client.listModelRoutes();
    const row = view.pricesInEffect?.find((p) => p.model === model && p.source === 'api');
    if (!row || !row.kept.includes('maxOutput') || row.price.maxOutput === undefined) return null;
    const from = row.replaces.source === 'api' ? `the API's price of ${row.replaces.model ?? 'a shorter name'}` : row.replaces.source === 'flotilla.yaml' ? 'flotilla.yaml' : 'the price table';
    return `max output ${row.price.maxOutput} tokens as in ${from}`;
  } catch {
    return null;
  }
}
