import { Hono, type Context } from 'hono';
import { silentLogger, type Logger } from '../core/log.js';
import { hashToken } from '../core/tokens.js';
import type { JobRow, Store } from '../store/types.js';
import type { GatewayConfig } from './config.js';
import { anthropicError } from './errors.js';
import { reserve, worstCaseMicros } from './budget.js';
import { meteredResponse, recordRefused, recordUnreachable, type CallContext } from './meter.js';
import { priceFor } from './prices.js';
import { mountOpenAi } from './openai-routes.js';
import { DEFAULT_RETRY, KeyRing, withRetries, type RetryPolicy } from './retry.js';
import { MAX_REQUEST_BYTES, providerForModel } from './config.js';
import { forwardToAnthropic } from './providers/anthropic.js';
import { scriptedResponse } from './providers/scripted.js';
import { parseMessagesRequest, type MessagesRequest } from './request.js';
import type { ModelScript } from './script.js';

/** The Store methods the gateway uses (a full `Store` fits). */
export type GatewayStore = Pick<Store, 'findJobByTokenHash' | 'recordModelCall' | 'reserveBudget' | 'settleBudget'>;

/** Options of {@link createGateway}. */
export interface GatewayOptions {
  store: GatewayStore;
  config: GatewayConfig;
  /** The scripted model's script for a job (its agent's script.yaml), or null when it has none. */
  scriptFor: (job: JobRow) => Promise<ModelScript | null>;
  /**
   * Called (and awaited, before the refusal is sent) when a call of `job` was refused because
   * its tree is out of budget; the control plane pauses the job there (or leaves it to fail,
   * per its agent's `onBudgetExhausted`). `message` is the refusal's text. Errors are logged.
   */
  onBudgetExhausted?: (job: JobRow, message: string) => Promise<void>;
  log?: Logger;
}

/** The job token from `x-api-key` or `Authorization: Bearer <token>`, or null. */
function tokenOf(c: Context): string | null {
  const key = c.req.header('x-api-key')?.trim();
  if (key) return key;
  const m = /^Bearer\s+(\S+)\s*$/i.exec(c.req.header('authorization') ?? '');
  return m?.[1] ?? null;
}

/**
 * The model gateway as a Hono app, mounted by the control plane at its root.
 *
 * Routes:
 * - `POST /v1/messages` (any query, e.g. `?beta=true`): Anthropic Messages, streamed (SSE) or
 *   not. Authenticated by a live job token (`x-api-key` or `Authorization: Bearer`), looked up
 *   by its SHA-256 hash; unknown or dead → 401 `authentication_error` with
 *   `x-should-retry: false`. Served by the configured provider (`anthropic`: forwarded
 *   upstream with the server's key; `scripted`: replayed from `scriptFor(job)`), and metered:
 *   one `recordModelCall` row per call (see meter.ts). Body not JSON / no model or messages →
 *   400 `invalid_request_error` naming the field. Upstream unreachable → 502 `api_error`.
 * - `POST /v1/messages/count_tokens`: forwarded (anthropic) or estimated as bytes/4 (scripted); not metered.
 * - `POST /v1/chat/completions`, `POST /v1/responses`: the OpenAI wire formats (openai-routes.ts).
 * Every model call first reserves its worst case against the job tree's budget (budget.ts);
 * a call that does not fit gets 402 `billing_error` (Anthropic) / 429 `insufficient_quota`
 * (OpenAI) with `x-should-retry: false`, is recorded as refused, and `onBudgetExhausted` runs.
 * - any other `/v1/*` → 404 `not_found_error`.
 * Other paths (e.g. Claude Code's `HEAD /` preconnect) are not routed here; the host app's
 * 404 answers them at once.
 * The token is never logged.
 */
export function createGateway(opts: GatewayOptions): Hono {
  const { store, config } = opts;
  const log = opts.log ?? silentLogger;
  const app = new Hono();
  // Several upstream keys (comma-separated) rotate per upstream call; see retry.ts.
  const anthropicKeys = new KeyRing((config.anthropicApiKey ?? '').split(',').map((k) => k.trim()).filter(Boolean));
  const retryPolicy: RetryPolicy = { ...DEFAULT_RETRY, ...config.retry };

  const authenticate = async (c: Context): Promise<JobRow | Response> => {
    const token = tokenOf(c);
    if (!token) return anthropicError(401, 'authentication_error', 'missing job token: send it as x-api-key or Authorization: Bearer', { retry: false });
    const job = await store.findJobByTokenHash(hashToken(token));
    if (!job) {
      log.warn('gateway: rejected an unknown or expired job token', { path: c.req.path });
      return anthropicError(401, 'authentication_error', 'invalid job token: unknown, or its job is no longer running', { retry: false });
    }
    return job;
  };

  /** Records the refusal, tells the control plane, and answers 402 billing_error (no retry). */
  const refuseForBudget = async (ctx: CallContext, message: string): Promise<Response> => {
    await recordRefused(ctx, 402, 'budget');
    try {
      await opts.onBudgetExhausted?.(ctx.job, message);
    } catch (err) {
      log.error('gateway: budget-exhausted handler failed', { job: ctx.job.id, error: (err as Error).message });
    }
    log.info('gateway: refused a call: tree out of budget', { job: ctx.job.id, root: ctx.job.rootId });
    return anthropicError(402, 'billing_error', message, { retry: false });
  };

  app.post('/v1/messages/count_tokens', async (c) => {
    const startedAt = Date.now();
    const job = await authenticate(c);
    if (job instanceof Response) return job;
    const raw = new Uint8Array(await c.req.arrayBuffer());
    // Not billed, but a spent tree gets the budget error here too (1 µ$ must still fit).
    const held = await reserve(store, job, 1, startedAt);
    if ('refused' in held) {
      const model = /"model"\s*:\s*"([^"]{1,200})"/.exec(new TextDecoder().decode(raw.subarray(0, 4096)))?.[1] ?? 'unknown';
      const ctx: CallContext = { store, prices: config.prices, log, job, provider: config.provider, requestModel: model, streamed: false, requestBytes: raw.byteLength, startedAt, api: 'anthropic-count-tokens' };
      return refuseForBudget(ctx, held.refused);
    }
    await held.settle(0);
    if (config.provider === 'anthropic') {
      try {
        const url = new URL(c.req.url);
        return await forwardToAnthropic({
          baseUrl: config.anthropicBaseUrl,
          apiKey: config.anthropicApiKey ?? '',
          pathAndQuery: url.pathname + url.search,
          method: 'POST',
          headers: c.req.raw.headers,
          body: raw,
          signal: c.req.raw.signal,
        });
      } catch (err) {
        log.warn('gateway: upstream unreachable', { job: job.id, error: (err as Error).message });
        return anthropicError(502, 'api_error', 'the model provider could not be reached');
      }
    }
    return c.json({ input_tokens: Math.ceil(raw.byteLength / 4) });
  });

  app.post('/v1/messages', async (c) => {
    const startedAt = Date.now();
    const job = await authenticate(c);
    if (job instanceof Response) return job;
    const raw = new Uint8Array(await c.req.arrayBuffer());
    if (raw.byteLength > (config.maxRequestBytes ?? MAX_REQUEST_BYTES)) {
      const big: CallContext = { store, prices: config.prices, log, job, provider: config.provider, requestModel: 'unknown', streamed: false, requestBytes: raw.byteLength, startedAt };
      await recordRefused(big, 413, 'too_large');
      return anthropicError(413, 'request_too_large', `request body is ${raw.byteLength} bytes; the limit is ${config.maxRequestBytes ?? MAX_REQUEST_BYTES}`, { retry: false });
    }
    const parsed = parseMessagesRequest(new TextDecoder().decode(raw));
    if ('error' in parsed) {
      const bad: CallContext = { store, prices: config.prices, log, job, provider: config.provider, requestModel: 'unknown', streamed: false, requestBytes: raw.byteLength, startedAt };
      await recordRefused(bad, 400, 'invalid_request');
      return anthropicError(400, 'invalid_request_error', parsed.error, { retry: false });
    }
    const request = parsed.request;
    const provider = providerForModel(config.modelProviders, request.model, config.provider);
    const ctx: CallContext = {
      store,
      prices: config.prices,
      log,
      job,
      provider: provider ?? config.provider,
      requestModel: request.model,
      streamed: request.stream === true,
      requestBytes: raw.byteLength,
      startedAt,
    };
    log.debug('gateway: model request', { job: job.id, model: request.model, stream: ctx.streamed, messages: request.messages.length });

    if (provider === null) {
      await recordRefused(ctx, 404, 'unknown_model');
      return anthropicError(404, 'not_found_error', `unknown model ${JSON.stringify(request.model)}: no FLOTILLA_MODEL_PROVIDERS rule matches it`, { retry: false });
    }
    if (provider !== 'anthropic' && provider !== 'scripted') {
      await recordRefused(ctx, 400, 'wrong_format');
      return anthropicError(400, 'invalid_request_error', `model ${JSON.stringify(request.model)} is served by provider ${provider}, which speaks the OpenAI formats: call /v1/chat/completions or /v1/responses`, { retry: false });
    }
    // Reserve the worst case against the tree budget before anything reaches the provider.
    const worst = worstCaseMicros(raw.byteLength, request.max_tokens, priceFor(config.prices, request.model));
    const held = await reserve(store, job, worst, startedAt);
    if ('refused' in held) return refuseForBudget(ctx, held.refused);
    ctx.reservation = held;
    try {
      return await serveMessages(c, ctx, raw, request);
    } catch (err) {
      await held.settle(0);
      throw err;
    }
  });

  const serveMessages = async (c: Context, ctx: CallContext, raw: Uint8Array<ArrayBuffer>, request: MessagesRequest): Promise<Response> => {
    const job = ctx.job;
    let res: Response;
    if (ctx.provider === 'scripted') {
      let script: ModelScript | null;
      try {
        script = await opts.scriptFor(job);
      } catch (err) {
        log.error('gateway: could not load the model script', { job: job.id, agent: job.agent, error: (err as Error).message });
        await ctx.reservation?.settle(0);
        return anthropicError(500, 'api_error', `scripted model: the script for agent "${job.agent}" could not be loaded: ${(err as Error).message}`, { retry: false });
      }
      res = scriptedResponse(script, job, request);
    } else {
      try {
        const url = new URL(c.req.url);
        const out = await withRetries(
          (apiKey) =>
            forwardToAnthropic({
              baseUrl: config.anthropicBaseUrl,
              apiKey,
              pathAndQuery: url.pathname + url.search,
              method: 'POST',
              headers: c.req.raw.headers,
              body: raw,
              signal: c.req.raw.signal,
            }),
          anthropicKeys,
          retryPolicy,
          { signal: c.req.raw.signal },
        );
        res = out.response;
        if (out.calls > 1) log.info('gateway: upstream retried', { job: job.id, calls: out.calls, status: res.status });
      } catch (err) {
        log.warn('gateway: upstream unreachable', { job: job.id, error: (err as Error).message });
        await recordUnreachable(ctx);
        return anthropicError(502, 'api_error', 'the model provider could not be reached');
      }
    }
    return meteredResponse(res, ctx);
  };

  mountOpenAi(app, { store, config, log, scriptFor: opts.scriptFor, ...(opts.onBudgetExhausted ? { onBudgetExhausted: opts.onBudgetExhausted } : {}) });

  app.all('/v1/*', (c) => anthropicError(404, 'not_found_error', `no such endpoint: ${c.req.method} ${c.req.path}`));

  return app;
}
