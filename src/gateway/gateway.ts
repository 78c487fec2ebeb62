import type { IncomingMessage, ServerResponse } from 'node:http';
import { Hono } from 'hono';
import { silentLogger, type Logger } from '../core/log.js';
import { refusePausedCall } from './job-auth.js';
import { CallAuth, messagesTokenOf } from './call-auth.js';
import { KeyMask } from './key-mask.js';
import type { JobRow, Store } from '../store/types.js';
import type { GatewayConfig } from './config.js';
import { anthropicError, providerNotConfiguredMessage } from './errors.js';
import { reserve } from './budget.js';
import { outputBound } from './max-output.js';
import { inFlightMessage, IN_FLIGHT_RETRY_AFTER_S, refusedByCallsInFlight, reserveOrWait, type BudgetRefusal } from './budget-wait.js';
import { callWorstCase } from './worst-case.js';
import { webSearchBound } from './server-tools.js';
import { estimateBytes, inlineImages } from './input-images.js';
import { meteredReply, recordRefused, recordUnreachable, type CallContext } from './meter.js';
import { inputTokensBound } from './usage.js';
import { priceFor } from './prices.js';
import { openAiRoutes } from './openai-routes.js';
import { DEFAULT_RETRY, KeyRing, withRetries, type RetryPolicy } from './retry.js';
import { MAX_REQUEST_BYTES } from './config.js';
import { ModelDirectory } from './model-directory.js';
import { forwardAnthropic } from './providers/anthropic.js';
import { noScriptMessage, scriptedMessagesReply } from './providers/scripted.js';
import { jsonReply, REPLY_OPS, type GatewayRequest, type Reply } from './reply.js';
import { nodeHandler } from './node-adapter.js';
import { abortJobCalls } from './live-calls.js';
import { ReplyBrokenError, ReplyTooLargeError, UpstreamTimeoutError } from './upstream-http.js';
import { BROKEN_STATUS, brokenMessage, recordBroken } from './upstream-broken.js';
import { recordTooLarge, tooLargeMessage } from './upstream-too-large.js';
import { recordTimedOut, TIMEOUT_STATUS, timeoutMessage } from './upstream-timeout.js';
import { fromRequest, toResponse } from './web-adapter.js';
import { MAX_TOKENS_REQUIRED, parseMessagesRequest, type MessagesRequest } from './request.js';
import type { ModelScript } from './script.js';

/** The Store methods the gateway uses (a full `Store` fits). */
export type GatewayStore = Pick<Store, 'findJobByTokenHash' | 'recordModelCall' | 'reserveBudget' | 'settleBudget' | 'listModelRoutes' | 'listModelPrices'> &
  Partial<Pick<Store, 'findPausedJobByTokenHash' | 'getTreeBudget' | 'getJobBudget'>>;

/** Options of {@link createGateway}. */
export interface GatewayOptions {
  store: GatewayStore;
  config: GatewayConfig;
  /** The scripted model's script for a job (its agent's script.yaml), or null when it has none. */
  scriptFor: (job: JobRow) => Promise<ModelScript | null>;
  /**
   * Called (and awaited, before the refusal is sent) when a call of `job` was refused because
   * its tree is out of budget — it does not fit even with no call in flight; a call kept out
   * only by calls in flight waits and gets a retryable 429 instead (M2, budget-wait.ts) — the
   * control plane pauses the job there (or leaves it to fail, per its agent's
   * `onBudgetExhausted`). `message` is the refusal's text. Errors are logged.
   */
  onBudgetExhausted?: (job: JobRow, message: string) => Promise<void>;
  /**
   * Model routes and price overrides (configuration overlaid with the API's, model-directory.ts);
   * default: one over `store` and `config`. Pass the one the API invalidates after a change.
   */
  directory?: ModelDirectory;
  log?: Logger;
}

/**
 * The gateway (see {@link createGateway}): one handler over {@link GatewayRequest}/{@link Reply}
 * and its two adapters — plain node:http (`node`, what the control plane serves) and a Hono app
 * over web fetch types (`fetch`, `request`, mountable with `route`; tests and embedders).
 */
export type Gateway = Hono & {
  /** Serves one call (body already read). Bad input gives an error reply, not a rejection. */
  handle(req: GatewayRequest): Promise<Reply>;
  /** The plain node:http handler the control plane routes `/v1/*` to (node-adapter.ts). */
  node(req: IncomingMessage, res: ServerResponse): void;
  /**
   * Aborts every model call of job `jobId` this gateway is serving (the job was cancelled, or
   * its attempt lost or fenced: the control plane calls this, server/live-call-aborts.ts): the
   * upstream request is aborted, a streamed reply ends for the client, and each call is settled
   * with the usage seen so far or the estimate, marked as one (live-calls.ts). @returns how many.
   */
  abortJob(jobId: number): number;
};

/**
 * The model gateway. The control plane's HTTP listener hands every `/v1/*` request to
 * {@link Gateway.node} before its Hono app (server.ts); tests may use `fetch`/`request`.
 *
 * Routes:
 * - `POST /v1/messages` (any query, e.g. `?beta=true`): Anthropic Messages, streamed (SSE) or
 *   not. Authenticated by a live job token (`x-api-key` or `Authorization: Bearer`), looked up
 *   by its SHA-256 hash; unknown or dead → 401 `authentication_error` with
 *   `x-should-retry: false`; a job paused for budget → the 402 budget refusal (job-auth.ts). Served by the configured provider (`anthropic`: forwarded
 *   upstream with the server's key; `scripted`: replayed from `scriptFor(job)`), and metered:
 *   one `recordModelCall` row per call (see meter.ts). Body not JSON / no model, messages or
 *   max_tokens (the Messages API requires it; nothing is reserved or forwarded without it) →
 *   400 `invalid_request_error` naming the field, recorded as refused. A max_tokens past the
 *   model's maximum output reserves that maximum (max-output.ts). Upstream unreachable → 502 `api_error`. A
 *   2xx reply over the whole-reply size limit (upstream-http.ts) → 502 `api_error` naming the
 *   limit, not retried, the call charged at its worst-case estimate (upstream-too-large.ts).
 *   A 2xx whose body breaks or does not decode → 502 `api_error`, not retried, the call charged
 *   an estimate (upstream-broken.ts); a 2xx body that is not JSON, or no body at all (a 204,
 *   an empty 200), reaches the client as sent, the call charged an estimate (meter.ts).
 * - `POST /v1/messages/count_tokens`: checked as `/v1/messages` is (same refusals, recorded
 *   as refused with api `anthropic-count-tokens`), then forwarded (anthropic, one key of the
 *   rotation) or estimated as bytes/4 (scripted); not metered.
 * - A model routed to `anthropic` with no ANTHROPIC_API_KEY → 500 `api_error`, not retried,
 *   naming the setting; the upstream sees nothing.
 * - Every reply has the server's upstream keys masked (key-mask.ts).
 * - `POST /v1/chat/completions`, `POST /v1/responses`: the OpenAI wire formats (openai-routes.ts).
 * Every model call first reserves its worst case against the job tree's budget (budget.ts;
 * server-side web searches included, worst-case.ts); a call that does not fit even with no
 * call in flight gets 402 `billing_error` (Anthropic) / 429 `insufficient_quota` (OpenAI) with
 * `x-should-retry: false`, is recorded as refused (`budget`), and `onBudgetExhausted` runs. A
 * call kept out only by calls in flight waits up to `config.budgetWaitMs` for them to settle,
 * then gets 429 `rate_limit_error` / `rate_limit_exceeded` with `retry-after` (retryable),
 * recorded as refused (`budget_in_flight`), its job left running (M2, budget-wait.ts).
 * - any other `/v1/*` → 404 `not_found_error`.
 * - a body over `maxRequestBytes` → 413 (`request_too_large`, recorded as refused on model calls).
 * Other paths (e.g. Claude Code's `HEAD /` preconnect) are not routed here; the host app's
 * 404 answers them at once.
 * The token is never logged.
 */
export function createGateway(opts: GatewayOptions): Gateway {
  const { store, config } = opts;
  const log = opts.log ?? silentLogger;
  const limit = config.maxRequestBytes ?? MAX_REQUEST_BYTES;
  // Several upstream keys (comma-separated) rotate per upstream call; see retry.ts. Every
  // upstream call takes exactly one key from a ring (never the configured text itself).
  const anthropicKeys = new KeyRing([config.anthropicApiKey ?? '']);
  // Every configured key of every provider is masked in what reaches a job (key-mask.ts).
  const mask = new KeyMask([config.anthropicApiKey ?? '', ...(config.openai?.apiKeys ?? [])]);
  const retryPolicy: RetryPolicy = { ...DEFAULT_RETRY, ...config.retry };
  const directory = opts.directory ?? new ModelDirectory(store, config.modelProviders, config.prices);
  // Job tokens: looked up once per call (before the body on the node path), rejections logged throttled.
  const callAuth = new CallAuth(store);

  /** A context for a call refused before a model was known (request model `unknown`). */
  const earlyContext = (job: JobRow, req: GatewayRequest, startedAt: number, api: string): CallContext => ({
    store,
    prices: config.prices,
    log,
    job,
    provider: config.provider,
    requestModel: 'unknown',
    streamed: false,
    requestBytes: req.bodyBytes,
    startedAt,
    api,
  });

  /** The control plane's `onBudgetExhausted` (errors logged). */
  const budgetExhausted = async (job: JobRow, message: string): Promise<void> => {
    try {
      await opts.onBudgetExhausted?.(job, message);
    } catch (err) {
      log.error('gateway: budget-exhausted handler failed', { job: job.id, error: (err as Error).message });
    }
  };

  /** Records the refusal, tells the control plane, and answers 402 billing_error (no retry). */
  const refuseForBudget = async (ctx: CallContext, message: string): Promise<Reply> => {
    await recordRefused(ctx, 402, 'budget');
    await budgetExhausted(ctx.job, message);
    log.info('gateway: refused a call: tree out of budget', { job: ctx.job.id, root: ctx.job.rootId });
    return anthropicError(402, 'billing_error', message, { retry: false });
  };

  /**
   * The refusal of a call costing up to `worst` µ$: out of budget → {@link refuseForBudget};
   * kept out only by calls in flight (after the wait) → recorded as refused (`budget_in_flight`),
   * the job left running, 429 `rate_limit_error` with retry-after (M2).
   */
  const refuse = async (ctx: CallContext, r: BudgetRefusal, worst: number): Promise<Reply> => {
    if (!r.inFlight) return refuseForBudget(ctx, r.refused);
    await recordRefused(ctx, 429, 'budget_in_flight');
    log.info('gateway: refused a call for now: calls in flight hold its budget', { job: ctx.job.id, root: ctx.job.rootId, worst });
    return anthropicError(429, 'rate_limit_error', inFlightMessage(ctx.job, r.budget, worst), { retry: true, retryAfterS: IN_FLIGHT_RETRY_AFTER_S });
  };

  /**
   * What `/v1/messages` and `/v1/messages/count_tokens` check before any budget or upstream
   * work, in this order, each refusal in Anthropic's shape and (past authentication) recorded
   * as refused under `api`: the job token (401; a job paused for budget gets the 402 budget
   * refusal instead), the body size (413), the body (400 naming the field; on
   * `anthropic-messages` a body without `max_tokens` too: {@link MAX_TOKENS_REQUIRED}), the model's route
   * (404 unknown model; 400 for a model of an OpenAI-format provider) and the provider's key
   * (500 `api_error`, not retried, naming ANTHROPIC_API_KEY).
   */
  const admit = async (req: GatewayRequest, startedAt: number, api: string): Promise<Reply | { ctx: CallContext; request: MessagesRequest }> => {
    // found before the body was read (node adapter): no second lookup, no await
    const preAuth = callAuth.of(req, messagesTokenOf);
    const auth = preAuth instanceof Promise ? await preAuth : preAuth;
    if ('missing' in auth) {
      callAuth.logRejected(log, auth, req.path);
      return anthropicError(401, 'authentication_error', 'missing job token: send it as x-api-key or Authorization: Bearer', { retry: false });
    }
    if ('unknown' in auth) {
      callAuth.logRejected(log, auth, req.path);
      return anthropicError(401, 'authentication_error', 'invalid job token: unknown, or its job is no longer running', { retry: false });
    }
    if ('pausedForBudget' in auth) {
      const message = await refusePausedCall(store, earlyContext(auth.pausedForBudget, req, startedAt, api), 402);
      return anthropicError(402, 'billing_error', message, { retry: false });
    }
    const job = auth.job;
    if (req.bodyBytes > limit) {
      await recordRefused(earlyContext(job, req, startedAt, api), 413, 'too_large');
      return anthropicError(413, 'request_too_large', `request body is ${req.bodyBytes} bytes; the limit is ${limit}`, { retry: false });
    }
    const parsed = parseMessagesRequest(req.body.toString('utf8'));
    if ('error' in parsed) {
      await recordRefused(earlyContext(job, req, startedAt, api), 400, 'invalid_request');
      return anthropicError(400, 'invalid_request_error', parsed.error, { retry: false });
    }
    const request = parsed.request;
    if (api === 'anthropic-messages' && request.max_tokens === undefined) {
      // The Messages API requires max_tokens (a 400 invalid_request_error upstream): without it
      // the call has no output bound to reserve, so it is refused here, not forwarded.
      const early = earlyContext(job, req, startedAt, api);
      early.requestModel = request.model;
      await recordRefused(early, 400, 'invalid_request');
      return anthropicError(400, 'invalid_request_error', MAX_TOKENS_REQUIRED, { retry: false });
    }
    // at once while the directory's copy is fresh (no await on the per-call path)
    const found = directory.lookup(request.model, config.provider);
    const { provider, prices } = found instanceof Promise ? await found : found;
    // earlyContext's fields, set here in one literal (no spread copies on every call)
    const ctx: CallContext = {
      store,
      prices,
      log,
      job,
      provider: provider ?? config.provider,
      requestModel: request.model,
      streamed: request.stream === true,
      requestBytes: req.body.byteLength,
      startedAt,
      api,
    };
    if (request.max_tokens !== undefined) ctx.maxOutputTokens = request.max_tokens;
    if (provider === null) {
      await recordRefused(ctx, 404, 'unknown_model');
      return anthropicError(404, 'not_found_error', `unknown model ${JSON.stringify(request.model)}: no model route matches it (see flotilla models list)`, { retry: false });
    }
    if (provider !== 'anthropic' && provider !== 'scripted') {
      await recordRefused(ctx, 400, 'wrong_format');
      return anthropicError(400, 'invalid_request_error', `model ${JSON.stringify(request.model)} is served by provider ${provider}, which speaks the OpenAI formats: call /v1/chat/completions or /v1/responses`, { retry: false });
    }
    if (provider === 'anthropic' && anthropicKeys.size === 0) {
      // Nothing is sent upstream without a key. Anthropic has no "not configured" error type:
      // api_error (500) with x-should-retry: false, which Claude Code does not retry.
      await recordRefused(ctx, 500, 'provider_not_configured');
      return anthropicError(500, 'api_error', providerNotConfiguredMessage(request.model, 'anthropic'), { retry: false });
    }
    return { ctx, request };
  };

  const countTokens = async (req: GatewayRequest): Promise<Reply> => {
    const startedAt = Date.now();
    const admitted = await admit(req, startedAt, 'anthropic-count-tokens');
    if (!('ctx' in admitted)) return admitted;
    const { ctx } = admitted;
    // Not billed, but a spent tree gets the budget error here too (1 µ$ must still fit); a tree
    // whose room only calls in flight hold is not spent: counted (M2).
    const held = await reserve(store, ctx.job, 1, startedAt);
    if ('refused' in held) {
      if (!refusedByCallsInFlight(held.budget, 1)) return refuseForBudget(ctx, held.refused);
    } else await held.settle(0);
    if (ctx.provider === 'anthropic') {
      try {
        const out = await withRetries(
          (apiKey) => forwardAnthropic({ baseUrl: config.anthropicBaseUrl, apiKey, pathAndQuery: req.pathAndQuery, method: 'POST', headers: req.headers, body: req.body, signal: req.signal }),
          anthropicKeys,
          retryPolicy,
          { signal: req.signal, ops: REPLY_OPS },
        );
        return out.response;
      } catch (err) {
        log.warn('gateway: upstream unreachable', { job: ctx.job.id, error: (err as Error).message });
        return anthropicError(502, 'api_error', 'the model provider could not be reached', { retry: false });
      }
    }
    return jsonReply(200, { input_tokens: Math.ceil(req.body.byteLength / 4) });
  };

  const messages = async (req: GatewayRequest): Promise<Reply> => {
    const startedAt = Date.now();
    const admitted = await admit(req, startedAt, 'anthropic-messages');
    if (!('ctx' in admitted)) return admitted;
    const { ctx, request } = admitted;
    const job = ctx.job;
    log.debug('gateway: model request', { job: job.id, model: request.model, stream: ctx.streamed, messages: request.messages.length });
    // Reserve the worst case against the tree budget before anything reaches the provider.
    // Inline images count by a bound per image, not by their base64 (input-images.ts).
    const images = inlineImages(request, req.body.byteLength);
    if (images.images > 0) ctx.requestBytes = estimateBytes(req.body.byteLength, images);
    ctx.maxInputTokens = inputTokensBound(req.body.byteLength, images.images);
    // max_tokens, at most the model's maximum output (max-output.ts)
    const price = priceFor(ctx.prices, request.model);
    const maxOut = outputBound(request.max_tokens, price);
    ctx.maxOutputTokens = maxOut;
    // server-side web search (H4): the searches the request allows are reserved for too
    const worst = callWorstCase(ctx, price, req.body.byteLength, maxOut, images, webSearchBound(request, 'anthropic-messages'));
    const held = await reserveOrWait(store, job, worst.micros, { now: startedAt, ttlMs: config.reservationTtlMs, signal: req.signal, call: worst.call, waitMs: config.budgetWaitMs });
    if ('refused' in held) return refuse(ctx, held, worst.micros);
    ctx.reservation = held;
    try {
      return await serveMessages(req, ctx, request);
    } catch (err) {
      await held.settle(0);
      throw err;
    }
  };

  const serveMessages = async (req: GatewayRequest, ctx: CallContext, request: MessagesRequest): Promise<Reply> => {
    const job = ctx.job;
    let res: Reply;
    if (ctx.provider === 'scripted') {
      let script: ModelScript | null;
      try {
        script = await opts.scriptFor(job);
      } catch (err) {
        log.error('gateway: could not load the model script', { job: job.id, agent: job.agent, error: (err as Error).message });
        await ctx.reservation?.settle(0);
        return anthropicError(500, 'api_error', `scripted model: the script for agent "${job.agent}" could not be loaded: ${(err as Error).message}`, { retry: false });
      }
      if (!script) {
        // A job must not "succeed" on a model that never ran: refuse, not retried (issue 2).
        await ctx.reservation?.settle(0);
        return anthropicError(400, 'invalid_request_error', noScriptMessage(job.agent), { retry: false });
      }
      res = scriptedMessagesReply(script, job, request);
    } else {
      try {
        const out = await withRetries(
          (apiKey) =>
            forwardAnthropic({
              baseUrl: config.anthropicBaseUrl,
              apiKey,
              pathAndQuery: req.pathAndQuery,
              method: 'POST',
              headers: req.headers,
              body: req.body,
              signal: req.signal,
            }),
          anthropicKeys,
          retryPolicy,
          { signal: req.signal, ops: REPLY_OPS },
        );
        res = out.response;
        if (out.calls > 1) log.info('gateway: upstream retried', { job: job.id, calls: out.calls, status: res.status });
      } catch (err) {
        if (err instanceof ReplyTooLargeError) {
          // A 2xx was billed: not retried, charged at the worst case (upstream-too-large.ts).
          await recordTooLarge(ctx, err);
          return anthropicError(502, 'api_error', tooLargeMessage(err), { retry: false });
        }
        if (err instanceof UpstreamTimeoutError && !req.signal.aborted) {
          // The upstream may have worked on it: not retried, charged an estimate (upstream-timeout.ts).
          await recordTimedOut(ctx, err);
          return anthropicError(TIMEOUT_STATUS, 'api_error', timeoutMessage(err), { retry: false });
        }
        if (err instanceof ReplyBrokenError) {
          // A 2xx was served and billed: not retried, charged an estimate (upstream-broken.ts).
          await recordBroken(ctx, err);
          return anthropicError(BROKEN_STATUS, 'api_error', brokenMessage(err), { retry: false });
        }
        const gone = req.signal.aborted;
        if (gone) log.info('gateway: the client went away before the reply', { job: job.id });
        else log.warn('gateway: upstream unreachable', { job: job.id, error: (err as Error).message });
        await recordUnreachable(ctx, gone);
        return anthropicError(502, 'api_error', 'the model provider could not be reached', { retry: false });
      }
    }
    return meteredReply(res, ctx, req.signal);
  };

  const openai = openAiRoutes({ store, config, log, directory, callAuth, scriptFor: opts.scriptFor, onBudgetExhausted: budgetExhausted });
  const routes: Record<string, (req: GatewayRequest) => Promise<Reply>> = {
    '/v1/messages': messages,
    '/v1/messages/count_tokens': countTokens,
    '/v1/chat/completions': openai.chat,
    '/v1/responses': openai.responses,
  };

  const handle = async (req: GatewayRequest): Promise<Reply> => {
    const route = req.method === 'POST' ? routes[req.path] : undefined;
    if (!route) return anthropicError(404, 'not_found_error', `no such endpoint: ${req.method} ${req.path}`, { retry: false });
    // Upstream keys never reach a job, whatever route or provider echoed them (key-mask.ts).
    return mask.reply(await route(req));
  };
  const viaFetch = async (r: Request): Promise<Response> => {
    const { request, abort } = await fromRequest(r, limit);
    // what a cancelled job's live calls are aborted by (live-calls.ts), as the node adapter's has
    (request.signal as { abort?: () => void }).abort = abort;
    let reply: Reply;
    try {
      reply = await handle(request);
    } catch (err) {
      log.error('gateway: request failed', { path: request.path, error: (err as Error).message });
      reply = anthropicError(500, 'api_error', 'internal error in the gateway');
    }
    return toResponse(reply, abort);
  };
  const app = new Hono();
  app.all('/v1/*', (c) => viaFetch(c.req.raw));
  const abortJob = (jobId: number): number => {
    const n = abortJobCalls(store, jobId);
    if (n > 0) log.info('gateway: aborted the live calls of an ended job', { job: jobId, calls: n });
    return n;
  };
  return Object.assign(app, { handle, abortJob, node: nodeHandler(handle, limit, log, callAuth) });
}
