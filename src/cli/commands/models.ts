import { Command, InvalidArgumentError, Option } from 'commander';
import { ModelPattern, ProviderName, type ModelPrice, type ModelRoutesView } from '../../protocol/index.js';
import type { CliContext } from '../context.js';
import { formatTable } from '../format.js';
import { addClientOptions, CliError, clientFrom, wantsJson, type ClientOptions } from '../options.js';

function pattern(text: string): string {
  const r = ModelPattern.safeParse(text);
  if (!r.success) throw new InvalidArgumentError(`model pattern ${r.error.issues[0]?.message ?? 'is invalid'}`);
  return text;
}

function provider(text: string): ProviderName {
  const r = ProviderName.safeParse(text);
  if (!r.success) throw new InvalidArgumentError(`provider must be one of ${ProviderName.options.join(', ')}`);
  return r.data;
}

function usdPerMTok(what: string): (text: string) => number {
  return (text) => {
    const n = Number(text);
    if (!/^\d+(\.\d+)?$/.test(text.trim()) || !Number.isFinite(n) || n > 1_000_000) throw new InvalidArgumentError(`${what} must be USD per million tokens (a number from 0 to 1000000)`);
    return n;
  };
}

/** Human-readable lines for a {@link ModelRoutesView}. */
export function describeRoutes(v: ModelRoutesView): string {
  const lines: string[] = [];
  if (!v.configured) lines.push('no model routes: every model goes to the provider of its wire format (Messages → anthropic or scripted; OpenAI formats → openai, openai-compatible or scripted)');
  else lines.push(formatTable(['PATTERN', 'PROVIDER', 'SOURCE', 'UPDATED'], v.routes.map((r) => [r.pattern === '*' ? '* (default)' : r.pattern, r.provider, r.source, r.updatedAt ?? '-'])));
  if (v.configured && !v.routes.some((r) => r.pattern === '*')) lines.push('no default route: a model no pattern matches is refused as unknown');
  lines.push(`prices: table ${v.priceTableVersion}${v.prices.length ? '; overrides (USD per million tokens):' : ', no overrides'}`);
  if (v.prices.length) {
    lines.push(formatTable(['MODEL', 'INPUT', 'OUTPUT', 'CACHE-WRITE-5M', 'CACHE-WRITE-1H', 'CACHE-READ'], v.prices.map((p) => [p.model, String(p.price.input), String(p.price.output), String(p.price.cacheWrite5m), String(p.price.cacheWrite1h), String(p.price.cacheRead)])));
  }
  return lines.join('\n');
}

/**
 * `flotilla models ...`: the gateway's model routes and price overrides (issue 3).
 * - `models list` (default): routes in the order tried, price overrides (members may read);
 * - `models set PATTERN PROVIDER` (admin): route model names matching PATTERN (exact name or
 *   glob like `claude-*`) to PROVIDER; `models default PROVIDER` = `models set '*' PROVIDER`;
 * - `models delete PATTERN` (admin): remove an API route;
 * - `models price MODEL --input --output [--cache-write-5m --cache-write-1h --cache-read]`
 *   (admin; USD per million tokens; cache prices default to input × 1.25, × 2, × 0.1, the
 *   Anthropic ratios; env FLOTILLA_PRICE_INPUT, ...); `models price MODEL --delete` removes it.
 * Every subcommand takes --server/--token/--data/--json (FLOTILLA_SERVER, ...). Exit 0 on
 * success; 1 on an API error (not an admin, unknown pattern, bad value: the message names it).
 */
export function registerModels(program: Command, ctx: CliContext): void {
  const out = (s: string) => ctx.io.stdout.write(s + '\n');
  const models = program.command('models').description('model routes (model name → provider) and price overrides of the gateway');

  addClientOptions(models.command('list', { isDefault: true }).description('routes in the order tried, and price overrides')).action(async (opts: ClientOptions, self: Command) => {
    const view = await (await clientFrom(opts)).listModelRoutes();
    out(wantsJson(self, opts) ? JSON.stringify(view) : describeRoutes(view));
  });

  const set = async (pat: string, prov: ProviderName, opts: ClientOptions, self: Command) => {
    const client = await clientFrom(opts);
    const route = await client.setModelRoute(pat, prov);
    out(wantsJson(self, opts) ? JSON.stringify(route) : `route set: ${route.pattern === '*' ? '* (default)' : route.pattern} → ${route.provider}`);
    // Once routes exist, a model no route matches is refused: say so when there is no default.
    if (pat !== '*' && !(await client.listModelRoutes()).routes.some((r) => r.pattern === '*')) {
      ctx.io.stderr.write(`warning: no default route: models matching no pattern (e.g. other than ${pat}) are now refused as unknown; set one with \`flotilla models default PROVIDER\`\n`);
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

  type PriceOpts = ClientOptions & { input?: number; output?: number; cacheWrite5m?: number; cacheWrite1h?: number; cacheRead?: number; delete?: boolean };
  addClientOptions(
    models
      .command('price')
      .description('override the price of a model, USD per million tokens (admin)')
      .argument('<model>', 'model name or name prefix (matched like the price table)')
      .addOption(new Option('--input <usd>', 'input tokens').env('FLOTILLA_PRICE_INPUT').argParser(usdPerMTok('--input')))
      .addOption(new Option('--output <usd>', 'output tokens').env('FLOTILLA_PRICE_OUTPUT').argParser(usdPerMTok('--output')))
      .addOption(new Option('--cache-write-5m <usd>', 'cache writes, 5-minute (default input × 1.25)').env('FLOTILLA_PRICE_CACHE_WRITE_5M').argParser(usdPerMTok('--cache-write-5m')))
      .addOption(new Option('--cache-write-1h <usd>', 'cache writes, 1-hour (default input × 2)').env('FLOTILLA_PRICE_CACHE_WRITE_1H').argParser(usdPerMTok('--cache-write-1h')))
      .addOption(new Option('--cache-read <usd>', 'cache reads (default input × 0.1)').env('FLOTILLA_PRICE_CACHE_READ').argParser(usdPerMTok('--cache-read')))
      .addOption(new Option('--delete', 'remove the override instead').env('FLOTILLA_PRICE_DELETE')),
  ).action(async (model: string, opts: PriceOpts, self: Command) => {
    const client = await clientFrom(opts);
    if (opts.delete) {
      await client.deleteModelPrice(model);
      return void out(wantsJson(self, opts) ? JSON.stringify({ deleted: model }) : `price override deleted: ${model}`);
    }
    if (opts.input === undefined || opts.output === undefined) throw new CliError('models price: --input and --output are required (USD per million tokens), or --delete', 2);
    const round = (x: number) => Math.round(x * 1e6) / 1e6;
    const price: ModelPrice = {
      input: opts.input,
      output: opts.output,
      cacheWrite5m: opts.cacheWrite5m ?? round(opts.input * 1.25),
      cacheWrite1h: opts.cacheWrite1h ?? round(opts.input * 2),
      cacheRead: opts.cacheRead ?? round(opts.input * 0.1),
    };
    const row = await client.setModelPrice(model, price);
    out(wantsJson(self, opts) ? JSON.stringify(row) : `price override set: ${row.model} input ${row.price.input}, output ${row.price.output}, cache write ${row.price.cacheWrite5m}/${row.price.cacheWrite1h}, cache read ${row.price.cacheRead} USD per million tokens`);
  });
}
