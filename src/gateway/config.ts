import { loadPriceTable, type PriceTable } from './prices.js';

/**
 * How the gateway reaches a model.
 * - `provider`: `anthropic` forwards to the Anthropic API with the server's key; `scripted`
 *   replays the agent's script file offline.
 * - `anthropicApiKey`: the server's upstream key (only for `anthropic`; never sent to runners).
 * - `anthropicBaseUrl`: upstream origin, no trailing slash (default https://api.anthropic.com).
 * - `prices`: the price table (USD per million tokens).
 */
export interface GatewayConfig {
  provider: 'anthropic' | 'scripted';
  anthropicApiKey?: string;
  anthropicBaseUrl: string;
  prices: PriceTable;
}

/** Default upstream for the `anthropic` provider. */
export const DEFAULT_ANTHROPIC_BASE_URL = 'https://api.anthropic.com';

/**
 * Reads the gateway's configuration from the environment: `ANTHROPIC_API_KEY` set (non-empty)
 * → provider `anthropic`, else `scripted`; `ANTHROPIC_BASE_URL` overrides the upstream;
 * `FLOTILLA_PRICES_FILE` overrides the price table file (default data/prices.json).
 * @throws Error when ANTHROPIC_BASE_URL is not an http(s) URL, or the price table is bad.
 */
export function loadGatewayConfig(env: NodeJS.ProcessEnv): GatewayConfig {
  const key = env.ANTHROPIC_API_KEY?.trim();
  const base = env.ANTHROPIC_BASE_URL?.trim() || DEFAULT_ANTHROPIC_BASE_URL;
  let url: URL;
  try {
    url = new URL(base);
  } catch {
    throw new Error(`ANTHROPIC_BASE_URL is not a URL: ${JSON.stringify(base)}`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new Error(`ANTHROPIC_BASE_URL must be http(s), got ${JSON.stringify(base)}`);
  }
  const prices = env.FLOTILLA_PRICES_FILE?.trim() ? loadPriceTable(env.FLOTILLA_PRICES_FILE.trim()) : loadPriceTable();
  return {
    provider: key ? 'anthropic' : 'scripted',
    ...(key ? { anthropicApiKey: key } : {}),
    anthropicBaseUrl: base.replace(/\/+$/, ''),
    prices,
  };
}
