import { DEFAULT_ANTHROPIC_BASE_URL, openAiUpstreamOf, providerConfigured, type GatewayConfig, type ModelRoute, type ProviderName } from '../../gateway/config.js';
import { providerSetting } from '../../gateway/errors.js';
import { compareApiRoutes, globMatches } from '../../gateway/model-directory.js';
import type { PriceInEffect } from '../../protocol/index.js';

/**
 * What `run --local` and `up` say first about the model jobs talk to ({@link describeModels}).
 * - `model`: the sentence, without the `flotilla: ` prefix;
 * - `offline`: true when every model goes to the offline scripted model;
 * - `warnings`: one per model route whose provider is not configured (no key or URL), in the
 *   gateway's own words for the refusal a job would get (`... which is not configured on this
 *   server: set ANTHROPIC_API_KEY ...`), and one per route an earlier one shadows, without the
 *   `flotilla: warning: ` prefix.
 */
export interface ModelDescription {
  model: string;
  offline: boolean;
  warnings: string[];
}

/** `http://host:port/path` of a URL without its user info or query (a key could sit there), for display. */
function shownUrl(url: string): string {
  try {
    const u = new URL(url);
    return `${u.protocol}//${u.host}${u.pathname.replace(/\/+$/, '')}`;
  } catch {
    return 'a bad URL';
  }
}

/** ` at URL` when the Anthropic upstream is not Anthropic's own (ANTHROPIC_BASE_URL: a proxy, a fake), else nothing (fresh-tester finding: it was not named). */
function anthropicAt(gateway: GatewayConfig): string {
  return gateway.anthropicBaseUrl && gateway.anthropicBaseUrl !== DEFAULT_ANTHROPIC_BASE_URL ? ` at ${shownUrl(gateway.anthropicBaseUrl)}` : '';
}

/** What a configured provider is, in words: `Claude through the Anthropic API`, `the OpenAI-compatible server at http://...`. */
function providerWords(gateway: GatewayConfig, provider: ProviderName): string {
  if (provider === 'scripted') return 'the offline scripted model';
  if (provider === 'anthropic') return `Claude through the Anthropic API${anthropicAt(gateway)}`;
  const upstream = openAiUpstreamOf(gateway, provider);
  const at = upstream ? ` at ${shownUrl(upstream.baseUrl)}` : '';
  return provider === 'openai' ? `the OpenAI API${at}` : `the OpenAI-compatible server${at}`;
}

/** A route's pattern as `flotilla models list` shows it: `*` is the default. */
function patternWords(r: ModelRoute): string {
  return r.pattern === '*' ? '* (any other model)' : r.pattern;
}

/**
 * Which model jobs will talk to, as far as the gateway configuration tells before any job runs.
 * Without model routes: Claude through the Anthropic API when ANTHROPIC_API_KEY holds a key,
 * else the offline scripted model; and where the OpenAI formats go when they have an upstream. With routes (flotilla.yaml `gateway.models`, then
 * FLOTILLA_MODEL_PROVIDERS: `gateway.modelProviders`), each route in the order the gateway
 * tries them (model-directory.ts resolveProvider: the specific ones in order, then the default
 * `*`) with where it sends models, a warning for each route to a provider that is not
 * configured, and when no route is the default, that other models are refused as unknown.
 * Routes set through the API (`flotilla models set`, kept in the store) are not known here:
 * {@link apiRoutesLine} says them.
 */
export function describeModels(gateway: GatewayConfig): ModelDescription {
  const routes = gateway.modelProviders ?? [];
  if (routes.length === 0) {
    const messages = gateway.provider === 'anthropic' ? `using Claude through the Anthropic API${anthropicAt(gateway)}` : 'offline scripted model (no ANTHROPIC_API_KEY set)';
    // where the OpenAI formats go, when they have an upstream (tester finding: nothing said so)
    const second = gateway.openaiSecond ? ` (${providerWords(gateway, gateway.openaiSecond.provider)} only for models routed to ${gateway.openaiSecond.provider})` : '';
    const openai = gateway.openai ? `; the OpenAI formats: ${providerWords(gateway, gateway.openai.provider)}${second}` : '';
    return { model: messages + openai, offline: gateway.provider !== 'anthropic' && !gateway.openai, warnings: [] };
  }
  const tried = [...routes.filter((r) => r.pattern !== '*'), ...routes.filter((r) => r.pattern === '*')];
  const warnings: string[] = [];
  const parts = tried.map((r) => {
    if (providerConfigured(gateway, r.provider)) return `${patternWords(r)} → ${providerWords(gateway, r.provider)}`;
    warnings.push(
      `model route ${r.pattern} maps models to provider ${r.provider}, which is not configured on this server: set ${providerSetting(r.provider)}, or route those models to another provider (flotilla.yaml gateway.models, FLOTILLA_MODEL_PROVIDERS)`,
    );
    return `${patternWords(r)} → ${r.provider} (not configured: its calls will fail)`;
  });
  warnings.push(...shadowedRoutes(routes));
  const noDefault = !routes.some((r) => r.pattern === '*');
  if (noDefault) parts.push('any other model → refused as unknown (no default route)');
  if (tried.every((r) => r.provider === 'scripted')) {
    const unknown = noDefault ? '; any other model is refused as unknown (no default route)' : '';
    return { model: `offline scripted model (every model route goes to it: ${tried.map(patternWords).join(', ')}${unknown})`, offline: true, warnings };
  }
  return { model: `model routes: ${parts.join('; ')}`, offline: false, warnings };
}

/**
 * A warning for each configured route other than `*` that can never be used: an earlier one
 * (configured routes are tried in order, the first match wins) matches every model it does —
 * the earlier glob matches the later pattern read as a name, its `*` a character the glob's own
 * `*` can take (fresh-user finding: `claude-sonnet-4-5` after `claude-*` was listed, never used).
 */
function shadowedRoutes(routes: readonly ModelRoute[]): string[] {
  const specific = routes.filter((r) => r.pattern !== '*');
  const out: string[] = [];
  specific.forEach((r, i) => {
    const earlier = specific.slice(0, i).find((e) => globMatches(e.pattern, r.pattern));
    if (earlier) out.push(`model route ${r.pattern} → ${r.provider} is never used: the earlier route ${earlier.pattern} → ${earlier.provider} matches every model it does (configured routes are tried in order: put the more specific first)`);
  });
  return out;
}

/**
 * The line `run --local` and `up` print first (`flotilla: ...`, {@link describeModels}), then
 * one `flotilla: warning: ...` line per route to a provider that is not configured; joined by
 * newlines, no trailing one.
 */
export function modelLine(gateway: GatewayConfig): string {
  const d = describeModels(gateway);
  return [`flotilla: ${d.model}`, ...d.warnings.map((w) => `flotilla: warning: ${w}`)].join('\n');
}

/**
 * The line `up` prints after {@link modelLine} when routes were set through the API (kept in the
 * store, `rows`: store listModelRoutes), which the configuration's line cannot know (fresh-tester
 * finding: the start line said `gpt-*` went to OpenAI while an API route sent it elsewhere):
 * each in the order the gateway tries them (model-directory.ts resolveProvider: API routes other
 * than `*` before every configured one, the API's `*` before the configured `*`) with where it
 * sends models; null when there are none.
 */
export function apiRoutesLine(gateway: GatewayConfig, rows: ReadonlyArray<{ pattern: string; provider: string }>): string | null {
  if (rows.length === 0) return null;
  const specific = rows.filter((r) => r.pattern !== '*').sort((a, b) => compareApiRoutes(a.pattern, b.pattern));
  const parts = [...specific, ...rows.filter((r) => r.pattern === '*')].map((r) => {
    const route = { pattern: r.pattern, provider: r.provider as ProviderName };
    return `${patternWords(route)} → ${providerConfigured(gateway, route.provider) ? providerWords(gateway, route.provider) : `${r.provider} (not configured: its calls will fail)`}`;
  });
  // the API's `*` comes after the configured specific routes, before the configured `*`
  // (model-directory.ts resolveProvider): "before the configured ones" said otherwise (fresh tester)
  const star = rows.some((r) => r.pattern === '*');
  const order = !star ? 'tried before the configured ones' : specific.length ? 'tried before the configured ones, but * after the configured patterns' : '* tried after the configured patterns';
  return `flotilla: model routes set through the API (${order}; flotilla models list shows all): ${parts.join('; ')}`;
}

/**
 * A warning for each price override set through the API that gives no long-context rates of its
 * own and takes some from the entry it replaces (`kept` holds `longContext`): the API refuses
 * that when the override is set, so the entry gained them since — a new price table, or
 * flotilla.yaml pricing a shorter name (a fresh tester: `kappa-mini` set at $1 took flotilla.yaml
 * `kappa`'s $50 long-context rates after a restart, ~50× the charge, and `up` said nothing).
 * `rows`: the gateway's prices in effect (gateway/price-sources.ts pricesInEffect); `version`:
 * the price table's. Without the `flotilla: warning: ` prefix.
 */
export function inheritedLongContextWarnings(rows: readonly PriceInEffect[], version: string): string[] {
  const byModel = new Map(rows.map((r) => [r.model, r]));
  return rows
    .filter((p) => p.source === 'api' && p.kept.includes('longContext') && p.price.longContext)
    .map((p) => {
      const lc = p.price.longContext!;
      // where the rates were set: past API overrides that keep them too (kappa-mini-latest takes
      // kappa-mini's, which takes flotilla.yaml kappa's: named, not the nearest, a fresh tester)
      const through: string[] = [];
      let origin = p.replaces;
      for (let next = byModel.get(origin.model ?? ''); origin.source === 'api' && next?.kept.includes('longContext') && !through.includes(next.model); next = byModel.get(origin.model ?? '')) {
        through.push(next.model);
        origin = next.replaces;
      }
      const named = origin.source === 'table' ? `the price table ${version}'s ${origin.model ?? 'default'}` : `${origin.source} ${origin.model ?? ''}`.trim();
      const from = through.length ? `${named}'s (through the API's ${through.join(', ')})` : `${named}'s`;
      return (
        `the API's price of ${p.model} gives no long-context rates of its own and takes ${from}: its calls above ${lc.aboveInputTokens} input-side tokens are charged input ${lc.input}, output ${lc.output} USD per million tokens under its own base rates (input ${p.price.input}, output ${p.price.output}); ` +
        `give it its own with flotilla models price ${p.model} ... --long-context-above N --long-context-input USD --long-context-output USD, or --no-long-context`
      );
    });
}
