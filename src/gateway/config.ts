import type { PriceOverride } from './price-override.js';
import { intSettingFromEnv, SettingError, settingFromEnv } from '../core/setting-env.js';
import { loadPriceTable, type PriceTable } from './prices.js';
import { splitKeys, type RetryPolicy } from './retry.js';
import { ModelPattern } from '../protocol/model-routes.js';

/**
 * How the gateway reaches a model.
 * - `provider`: `anthropic` forwards to the Anthropic API with the server's key; `scripted`
 *   replays the agent's script file offline.
 * - `anthropicApiKey`: the server's upstream key (only for `anthropic`; never sent to runners);
 *   several comma-separated keys rotate per upstream call.
 * - `anthropicBaseUrl`: upstream origin, no trailing slash (default https://api.anthropic.com).
 * - `prices`: the price table (USD per million tokens).
 */
export interface GatewayConfig {
  provider: 'anthropic' | 'scripted';
  anthropicApiKey?: string;
  anthropicBaseUrl: string;
  prices: PriceTable;
  /**
   * The default upstream of the OpenAI wire formats (`/v1/chat/completions`, `/v1/responses`),
   * the one a model no route names goes to; absent → the scripted model answers them. `openai`: OPENAI_API_KEY (comma-separated keys rotate),
   * base OPENAI_BASE_URL (default https://api.openai.com/v1); `openai-compatible`:
   * FLOTILLA_OPENAI_COMPATIBLE_URL (any base URL with /v1, e.g. llama.cpp, Ollama) and
   * optional FLOTILLA_OPENAI_COMPATIBLE_KEY.
   */
  openai?: OpenAiUpstream;
  /**
   * The other OpenAI-format upstream, when both are configured: `openai` (OPENAI_API_KEY) beside
   * an {@link openai} that is `openai-compatible` (FLOTILLA_OPENAI_COMPATIBLE_URL), so routes can
   * send `gpt-*` to OpenAI and `qwen*` to a local server at once. A model with no route goes to
   * {@link openai}, the default of the OpenAI formats.
   */
  openaiSecond?: OpenAiUpstream;
  /**
   * Model → provider by configuration (FLOTILLA_MODEL_PROVIDERS, e.g.
   * `claude-*=anthropic,gpt-*=openai,qwen*=openai-compatible,*=scripted`), after the routes of
   * flotilla.yaml's `gateway.models` (config-file.ts): the first pattern that matches wins (`*`
   * = any run of characters; a lone `*` is the default, tried last). Routes set through the
   * API come first (model-directory.ts resolveProvider). Without any route every model goes to
   * the default provider of its wire format; with some, a model none matches is unknown.
   */
  modelProviders?: ModelRoute[];
  /** Largest request body accepted, bytes (default {@link MAX_REQUEST_BYTES}); bigger → 413, recorded as refused. */
  maxRequestBytes?: number;
  /**
   * How long a call's budget reservation is held at most, ms (default 2 min,
   * FLOTILLA_GATEWAY_RESERVATION_TTL_MS) when its gateway stops keeping it alive: past it the
   * sweeper charges it as the call's cost (H7), as for a gateway that died mid-call.
   */
  reservationTtlMs?: number;
  /**
   * How long a call refused only because of other calls in flight waits for them to settle
   * before its retryable 429, ms (M2, budget-wait.ts; default 20 s,
   * FLOTILLA_GATEWAY_BUDGET_WAIT_MS, 0–600000; 0 = answer at once).
   */
  budgetWaitMs?: number;
  /**
   * How long a job a top-up resumed may stay queued (not started) before the budget room it
   * holds for its call lapses, ms (server/budget-sweep.ts BUDGET_HOLD_MS, 15 min;
   * FLOTILLA_GATEWAY_BUDGET_HOLD_MS, 10000–604800000).
   */
  budgetHoldMs?: number;
  /** Upstream retry policy (retry.ts); FLOTILLA_GATEWAY_RETRIES sets `retries` (0–10, default 2). */
  retry?: Partial<RetryPolicy>;
  /**
   * Where `prices` came from when a config file overrides some (config-file.ts
   * withGatewayFile): the file's path, its `gateway.prices` as written (USD per million
   * tokens; `maxOutput` tokens) and the price table they were laid over (`table.version` is
   * `prices.version`). Absent: `prices` is the price table as loaded. Read by
   * price-sources.ts to say where each price in effect comes from.
   */
  priceFile?: PriceFileSource;
}

/** What {@link GatewayConfig.priceFile} holds. */
export interface PriceFileSource {
  file: string;
  prices: Record<string, PriceOverride>;
  table: PriceTable;
}

/** Default request size limit: 32 MB, Anthropic's own limit for Messages requests. */
export const MAX_REQUEST_BYTES = 32 * 1024 * 1024;

/** A provider the gateway can send a call to. */
export type ProviderName = 'anthropic' | 'scripted' | 'openai' | 'openai-compatible';
const PROVIDERS: readonly ProviderName[] = ['anthropic', 'scripted', 'openai', 'openai-compatible'];

/** An OpenAI-format upstream: its provider, base URL (with /v1) and keys (rotated per upstream call; none for a server that takes none). */
export interface OpenAiUpstream {
  provider: 'openai' | 'openai-compatible';
  baseUrl: string;
  apiKeys: string[];
}

/** The OpenAI-format upstream of `provider` in `config` ({@link GatewayConfig.openai} or {@link GatewayConfig.openaiSecond}), if configured. */
export function openAiUpstreamOf(config: Pick<GatewayConfig, 'openai' | 'openaiSecond'>, provider: string): OpenAiUpstream | undefined {
  if (config.openai?.provider === provider) return config.openai;
  return config.openaiSecond?.provider === provider ? config.openaiSecond : undefined;
}

/** One `pattern=provider` rule of FLOTILLA_MODEL_PROVIDERS. */
export interface ModelRoute {
  pattern: string;
  provider: ProviderName;
}

/**
 * Parses `pattern=provider,pattern=provider` (spaces allowed). Each pattern is a
 * protocol ModelPattern, as in flotilla.yaml and the API; a pattern given twice is refused (the
 * second rule could never be used), and so is a value with no rule in it (`,,`).
 * @throws Error naming FLOTILLA_MODEL_PROVIDERS and the bad rule.
 */
export function parseModelProviders(text: string): ModelRoute[] {
  const rules = text
    .split(',')
    .map((r) => r.trim())
    .filter(Boolean)
    .map((rule) => {
      const m = /^([^=\s]+)\s*=\s*(\S+)$/.exec(rule);
      if (!m || !PROVIDERS.includes(m[2] as ProviderName)) {
        throw new SettingError(`FLOTILLA_MODEL_PROVIDERS: rule ${JSON.stringify(rule)} must be <model pattern>=<${PROVIDERS.join('|')}>`);
      }
      const pattern = ModelPattern.safeParse(m[1]);
      if (!pattern.success) throw new SettingError(`FLOTILLA_MODEL_PROVIDERS: rule ${JSON.stringify(rule)}: the model pattern ${pattern.error.issues[0]?.message ?? 'is not valid'}`);
      return { pattern: pattern.data, provider: m[2] as ProviderName };
    });
  if (rules.length === 0) throw new SettingError(`FLOTILLA_MODEL_PROVIDERS: no rule in ${JSON.stringify(text)}: give <model pattern>=<${PROVIDERS.join('|')}>,... or leave it unset`);
  const seen = new Set<string>();
  for (const r of rules) {
    if (seen.has(r.pattern)) throw new SettingError(`FLOTILLA_MODEL_PROVIDERS: the model pattern ${JSON.stringify(r.pattern)} is given twice (the first rule wins, the second could never be used): give each once`);
    seen.add(r.pattern);
  }
  return rules;
}

/**
 * The provider for `model`: the first matching rule of `routes`; with no routes configured,
 * `fallback`; null when routes are configured and none matches (an unknown model).
 */
export function providerForModel(routes: readonly ModelRoute[] | undefined, model: string, fallback: ProviderName): ProviderName | null {
  if (!routes || routes.length === 0) return fallback;
  for (const r of routes) {
    const hit = r.pattern.endsWith('*') ? model.startsWith(r.pattern.slice(0, -1)) : model === r.pattern;
    if (hit) return r.provider;
  }
  return null;
}

/**
 * True when the gateway has what `provider` needs to be called: `scripted` always; `anthropic`
 * a key (ANTHROPIC_API_KEY); `openai` OPENAI_API_KEY; `openai-compatible` its URL.
 */
export function providerConfigured(config: GatewayConfig, provider: ProviderName): boolean {
  if (provider === 'scripted') return true;
  if (provider === 'anthropic') return config.provider === 'anthropic';
  const upstream = openAiUpstreamOf(config, provider);
  return upstream !== undefined && (provider !== 'openai' || upstream.apiKeys.length > 0);
}

/** Default upstream for the `openai` provider. */
export const DEFAULT_OPENAI_BASE_URL = 'https://api.openai.com/v1';

/**
 * The upstream base URL setting `name` = `value`, without trailing slashes.
 * @throws Error naming `name` when `value` is not an http(s) URL, has a query or fragment (the
 *   API's paths are appended to it), or holds a user name or password (`http://user:pw@host/v1`):
 *   the gateway sends the provider's key in its own header and no credentials of the URL, so they
 *   were dropped without a word (fresh-user finding). The message never repeats them, nor the query.
 */
function httpUrl(name: string, value: string, keySetting: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new SettingError(`${name} is not a URL: ${JSON.stringify(withoutUserInfo(value))}`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new SettingError(`${name} must be http(s), got ${JSON.stringify(withoutUserInfo(value))}`);
  if (url.search !== '' || url.hash !== '') {
    // the API paths go after the base URL (`${base}/chat/completions`): after a query they would be part of it
    throw new SettingError(`${name} has a ${url.search !== '' ? 'query (?...)' : 'fragment (#...)'}: a base URL takes the API's paths after it (${url.protocol}//${url.host}${url.pathname}); leave it out${url.search !== '' ? `, and put a key in ${keySetting}` : ''}`);
  }
  if (url.username !== '' || url.password !== '') {
    throw new SettingError(`${name} holds a user name or password (${url.protocol}//***@${url.host}${url.pathname}): the gateway does not send them upstream; put the provider's key in ${keySetting} and leave it out of the URL`);
  }
  return value.replace(/\/+$/, '');
}

/**
 * `value` with what could be credentials before an `@` of its authority masked, for messages:
 * `http://u:pw@host` → `http://***@host`, and without a scheme too (`u:pw@host/v1` → `***@host/v1`,
 * which `new URL` reads as the scheme `u:`: fresh-user finding).
 */
function withoutUserInfo(value: string): string {
  return value.replace(/^([a-z][a-z0-9+.-]*:\/\/)?[^/?#]*@/i, (_m, scheme: string | undefined) => `${scheme ?? ''}***@`);
}

/**
 * The OpenAI-format upstreams from the environment ({@link GatewayConfig.openai} and
 * {@link GatewayConfig.openaiSecond}): FLOTILLA_OPENAI_COMPATIBLE_URL (+ _KEY) → the
 * `openai-compatible` one, the default when set; OPENAI_API_KEY (+ OPENAI_BASE_URL) → the
 * `openai` one, second when the other is set. @throws Error naming a bad URL variable.
 */
export function loadOpenAiUpstreams(env: NodeJS.ProcessEnv): Pick<GatewayConfig, 'openai' | 'openaiSecond'> {
  const compatUrl = settingFromEnv(env, 'FLOTILLA_OPENAI_COMPATIBLE_URL');
  const compat: OpenAiUpstream | undefined = compatUrl
    ? { provider: 'openai-compatible', baseUrl: httpUrl('FLOTILLA_OPENAI_COMPATIBLE_URL', compatUrl, 'FLOTILLA_OPENAI_COMPATIBLE_KEY'), apiKeys: splitKeys(keySetting(env.FLOTILLA_OPENAI_COMPATIBLE_KEY)) }
    : undefined;
  const keys = splitKeys(keySetting(env.OPENAI_API_KEY));
  const openai: OpenAiUpstream | undefined = keys.length
    ? { provider: 'openai', baseUrl: httpUrl('OPENAI_BASE_URL', env.OPENAI_BASE_URL?.trim() || DEFAULT_OPENAI_BASE_URL, 'OPENAI_API_KEY'), apiKeys: keys }
    : undefined;
  if (compat) return openai ? { openai: compat, openaiSecond: openai } : { openai: compat };
  return openai ? { openai } : {};
}

/**
 * A provider key setting (ANTHROPIC_API_KEY, OPENAI_API_KEY, FLOTILLA_OPENAI_COMPATIBLE_KEY:
 * comma-separated keys) as its keys joined by `,` (each trimmed, empty entries dropped), or
 * undefined when it holds no key: unset, blank and only-commas settings (`' , '`) all count as unset.
 */
export function keySetting(text: string | undefined): string | undefined {
  const keys = splitKeys(text);
  return keys.length ? keys.join(',') : undefined;
}

/** Default upstream for the `anthropic` provider. */
export const DEFAULT_ANTHROPIC_BASE_URL = 'https://api.anthropic.com';

/**
 * Reads the gateway's configuration from the environment: `ANTHROPIC_API_KEY` holding a key ({@link keySetting})
 * → provider `anthropic`, else `scripted`; `ANTHROPIC_BASE_URL` overrides the upstream;
 * `FLOTILLA_PRICES_FILE` overrides the price table file (default data/prices.json).
 * @throws Error when ANTHROPIC_BASE_URL is not an http(s) URL, the price table is bad, or a
 *   FLOTILLA_GATEWAY_* number is out of range.
 */
export function loadGatewayConfig(env: NodeJS.ProcessEnv): GatewayConfig {
  const key = keySetting(env.ANTHROPIC_API_KEY);
  const base = httpUrl('ANTHROPIC_BASE_URL', env.ANTHROPIC_BASE_URL?.trim() || DEFAULT_ANTHROPIC_BASE_URL, 'ANTHROPIC_API_KEY');
  const pricesFile = settingFromEnv(env, 'FLOTILLA_PRICES_FILE');
  const prices = pricesFile ? loadPriceTable(pricesFile) : loadPriceTable();
  const upstreams = loadOpenAiUpstreams(env);
  const retries = intSettingFromEnv(env, 'FLOTILLA_GATEWAY_RETRIES', 0, 10);
  const retry: Partial<RetryPolicy> | undefined = retries === undefined ? undefined : { retries };
  const reservationTtlMs = intSettingFromEnv(env, 'FLOTILLA_GATEWAY_RESERVATION_TTL_MS', 10_000, 86_400_000, 'milliseconds');
  const budgetWaitMs = intSettingFromEnv(env, 'FLOTILLA_GATEWAY_BUDGET_WAIT_MS', 0, 600_000, 'milliseconds');
  const budgetHoldMs = intSettingFromEnv(env, 'FLOTILLA_GATEWAY_BUDGET_HOLD_MS', 10_000, 604_800_000, 'milliseconds');
  const routesText = settingFromEnv(env, 'FLOTILLA_MODEL_PROVIDERS');
  const modelProviders = routesText ? parseModelProviders(routesText) : undefined;
  return {
    ...(reservationTtlMs !== undefined ? { reservationTtlMs } : {}),
    ...(budgetWaitMs !== undefined ? { budgetWaitMs } : {}),
    ...(budgetHoldMs !== undefined ? { budgetHoldMs } : {}),
    ...(modelProviders ? { modelProviders } : {}),
    ...(retry ? { retry } : {}),
    ...upstreams,
    provider: key ? 'anthropic' : 'scripted',
    ...(key ? { anthropicApiKey: key } : {}),
    anthropicBaseUrl: base,
    prices,
  };
}
