import type { Logger } from '../core/log.js';
import type { CallAuth } from './call-auth.js';
import { messagesTokenOf, missingTokenMessage, openaiTokenOf } from './call-auth.js';
import { providerConfigured, type GatewayConfig, type ProviderName } from './config.js';
import { anthropicError } from './errors.js';
import { openaiError } from './openai-wire.js';
import { modelNameProblem } from './request.js';
import type { ModelDirectory } from './model-directory.js';
import type { UpstreamModels } from './upstream-models.js';
import { jsonReply, queryOf, type GatewayRequest, type Reply } from './reply.js';

/** What the models routes need: the directory (routes and prices), the configuration (which providers have a key or URL) and the job-token check. */
export interface ListModelsDeps {
  directory: ModelDirectory;
  config: GatewayConfig;
  callAuth: CallAuth;
  log: Logger;
  /** The ids the OpenAI-compatible upstream lists (upstream-models.ts), when one is configured. */
  upstreamModels?: UpstreamModels;
}

/** Anthropic's List Models `limit`: default and bounds (its documented 1..1000, default 20). */
export const ANTHROPIC_MODELS_LIMIT = { default: 20, min: 1, max: 1000 } as const;

/** The providers that serve each wire format (anthropic-routes.ts, openai-routes.ts refuse the others as `wrong_format`). */
const SPEAKS: Record<'anthropic' | 'openai', readonly ProviderName[]> = {
  anthropic: ['anthropic', 'scripted'],
  openai: ['openai', 'openai-compatible', 'scripted'],
};

/** True for `GET /v1/models` and `GET /v1/models/{id}`. */
export function isModelsPath(method: string, path: string): boolean {
  return method === 'GET' && (path === '/v1/models' || (path.startsWith('/v1/models/') && path.length > '/v1/models/'.length));
}

/**
 * `GET /v1/models` and `GET /v1/models/{id}`: the models a job can call through this gateway,
 * in the asking client's wire format — Anthropic's when the request carries `anthropic-version`
 * (its SDKs send it on every request; errors.ts noSuchEndpoint decides the same way), else
 * OpenAI's. A model is listed when the gateway knows its name (the price table with
 * flotilla.yaml's and the API's prices, and route patterns without `*`: ModelDirectory
 * knownModels), a route sends it to a provider that speaks that format, and this server has
 * that provider's key or URL: the calls it would refuse (`unknown_model`, `wrong_format`,
 * `provider_not_configured`) are not offered. The OpenAI listing adds the models an
 * OpenAI-compatible upstream lists itself that a call would be routed to it (`upstreamModels`,
 * upstream-models.ts). One model (`/v1/models/{id}`) is found by the
 * same rule, its provider resolved from the routes (a name only a pattern such as `qwen*`
 * matches, which no listing can hold, included). Sorted by id; no release dates are kept, so
 * `created_at` / `created` is the price table's version date.
 *
 * Shapes (the providers' documented List/Retrieve Model responses):
 * - Anthropic: `{ data: [{ type: 'model', id, display_name, created_at }], has_more, first_id,
 *   last_id }`, paged by `limit` (1..1000, default 20), `after_id`, `before_id` (ids after or
 *   before that one in the listing's order; it need not be listed); one model: the object.
 *   `display_name` is the id (the gateway keeps no marketing names).
 * - OpenAI: `{ object: 'list', data: [{ id, object: 'model', created, owned_by }] }`, `owned_by`
 *   the provider's name; one model: the object.
 * Errors: no or unknown job token → 401 (as on the model routes; a job paused for budget may
 * list); a model not offered → 404 (`not_found_error`; OpenAI `model_not_found`); a bad `limit`
 * or both `after_id` and `before_id` → 400 naming the parameter. Nothing is metered or recorded:
 * listing is not a model call.
 */
export async function serveModels(req: GatewayRequest, d: ListModelsDeps): Promise<Reply> {
  const anthropic = req.headers['anthropic-version'] !== undefined;
  const preAuth = d.callAuth.of(req, anthropic ? messagesTokenOf : openaiTokenOf);
  const auth = preAuth instanceof Promise ? await preAuth : preAuth;
  if ('missing' in auth || 'unknown' in auth) {
    d.callAuth.logRejected(d.log, auth, req.path);
    const message = 'missing' in auth ? missingTokenMessage(req.headers, anthropic ? 'anthropic' : 'openai') : 'invalid job token: unknown, or its job is no longer running';
    return anthropic ? anthropicError(401, 'authentication_error', message, { retry: false }) : openaiError(401, 'invalid_request_error', message, 'invalid_api_key');
  }
  const format = anthropic ? 'anthropic' : 'openai';
  const fallback = anthropic ? d.config.provider : (d.config.openai?.provider ?? 'scripted');
  const known = await d.directory.knownModels(fallback);
  let offered = known.models.filter((m) => SPEAKS[format].includes(m.provider) && providerConfigured(d.config, m.provider));
  if (!anthropic && req.path === '/v1/models' && d.upstreamModels) offered = await withUpstreamModels(offered, d.upstreamModels, d.directory, fallback);
  const day = /^\d{4}-\d{2}-\d{2}$/.test(known.version) ? known.version : '1970-01-01';
  const createdAt = `${day}T00:00:00Z`;
  const created = Math.floor(Date.parse(createdAt) / 1000);
  const view = (m: { id: string; provider: ProviderName }) =>
    anthropic ? { type: 'model', id: m.id, display_name: m.id, created_at: createdAt } : { id: m.id, object: 'model', created, owned_by: m.provider };

  if (req.path !== '/v1/models') {
    let id: string;
    try {
      id = decodeURIComponent(req.path.slice('/v1/models/'.length));
    } catch {
      id = req.path.slice('/v1/models/'.length);
    }
    // a name the listing cannot hold (a route pattern's `*` matches it: `qwen*`) is offered
    // when a call naming it would be routed (fresh-tester finding: a 404 "no route sends it"
    // for a model whose calls went through)
    const provider = offered.find((m) => m.id === id)?.provider ?? (await d.directory.providerFor(id, fallback));
    if (modelNameProblem(id) === null && provider !== null && SPEAKS[format].includes(provider) && providerConfigured(d.config, provider)) return jsonReply(200, view({ id, provider }));
    const message = `model ${JSON.stringify(id)} is not offered by this gateway: no route sends it to a configured provider of the ${anthropic ? 'Messages' : 'OpenAI'} format (see flotilla models list)`;
    return anthropic ? anthropicError(404, 'not_found_error', message, { retry: false }) : openaiError(404, 'invalid_request_error', message, 'model_not_found', 'model');
  }

  if (!anthropic) return jsonReply(200, { object: 'list', data: offered.map(view) });
  const page = anthropicPage(new URLSearchParams(queryOf(req.pathAndQuery)), offered.map((m) => m.id));
  if ('error' in page) return anthropicError(400, 'invalid_request_error', page.error, { retry: false });
  const data = offered.slice(page.from, page.to).map(view);
  return jsonReply(200, { data, has_more: page.hasMore, first_id: data[0]?.id ?? null, last_id: data[data.length - 1]?.id ?? null });
}

/**
 * `offered` with the ids the OpenAI-compatible upstream lists that a call would send to it
 * (the routes resolve them to `openai-compatible`: a local server's own names, which no price
 * table holds), each once, in id order.
 */
async function withUpstreamModels(offered: Array<{ id: string; provider: ProviderName }>, upstream: UpstreamModels, directory: ModelDirectory, fallback: ProviderName): Promise<Array<{ id: string; provider: ProviderName }>> {
  const have = new Set(offered.map((m) => m.id));
  const more: Array<{ id: string; provider: ProviderName }> = [];
  for (const id of await upstream.ids()) {
    if (have.has(id) || (await directory.providerFor(id, fallback)) !== 'openai-compatible') continue;
    more.push({ id, provider: 'openai-compatible' });
  }
  if (more.length === 0) return offered;
  return [...offered, ...more].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}

/**
 * The slice [from, to) of `ids` (sorted) that Anthropic's paging parameters select, and whether
 * more lie beyond it in the paging direction; or an error naming the bad parameter.
 */
export function anthropicPage(q: URLSearchParams, ids: readonly string[]): { from: number; to: number; hasMore: boolean } | { error: string } {
  const rawLimit = q.get('limit');
  let limit: number = ANTHROPIC_MODELS_LIMIT.default;
  if (rawLimit !== null) {
    if (!/^\d+$/.test(rawLimit) || Number(rawLimit) < ANTHROPIC_MODELS_LIMIT.min || Number(rawLimit) > ANTHROPIC_MODELS_LIMIT.max) {
      return { error: `limit: must be a whole number from ${ANTHROPIC_MODELS_LIMIT.min} to ${ANTHROPIC_MODELS_LIMIT.max}, got ${JSON.stringify(rawLimit)}` };
    }
    limit = Number(rawLimit);
  }
  const after = q.get('after_id');
  const before = q.get('before_id');
  if (after !== null && before !== null) return { error: 'after_id and before_id: give at most one of them' };
  if (before !== null) {
    const to = ids.findIndex((id) => id >= before);
    const end = to < 0 ? ids.length : to;
    const from = Math.max(0, end - limit);
    return { from, to: end, hasMore: from > 0 };
  }
  const start = after === null ? 0 : ids.findIndex((id) => id > after);
  const from = start < 0 ? ids.length : start;
  const to = Math.min(ids.length, from + limit);
  return { from, to, hasMore: to < ids.length };
}
