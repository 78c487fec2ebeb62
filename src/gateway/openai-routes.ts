import { isUtf8 } from 'node:buffer';
import { refusePausedCall, refusePausedWhileWaiting } from './job-auth.js';
import { CallAuth, missingTokenMessage, openaiTokenOf } from './call-auth.js';
import { providerNotConfiguredMessage, shuttingDown, wrongFormatMessage } from './errors.js';
import type { Logger } from '../core/log.js';
import type { NeedCall } from './worst-case.js';
import type { JobRow } from '../store/types.js';
import { abandonedWait, inFlightMessage, IN_FLIGHT_RETRY_AFTER_S, reserveOrWait } from './budget-wait.js';
import { callWorstCase } from './worst-case.js';
import { worstPastAnyBudget } from './worst-past-cap.js';
import { outputBound } from './max-output.js';
import { webSearchBound } from './server-tools.js';
import { toolFeeBound } from './tool-fees.js';
import { estimateBytes, requestMedia } from './input-images.js';
import { MAX_REQUEST_BYTES, openAiUpstreamOf, providerConfigured, type GatewayConfig } from './config.js';
import type { ModelDirectory } from './model-directory.js';
import { meteredReply, recordRefused, type CallContext } from './meter.js';
import { recordUpstreamFailure } from './upstream-failure.js';
import { upstreamSignal } from './upstream-signal.js';
import { bodyRefusalOf, bodyRefusalReply, bodyTooLargeMessage } from './body-refusal.js';
import { refusedProvider, requestNamedIn, UNKNOWN_MODEL } from './refused-model.js';
import { logRetried, upstreamRetryOptions } from './upstream-auth.js';
import { unpassedReply } from './upstream-redirect.js';
import { OpenAiStreamReader, usageFromOpenAiBody } from './openai-usage.js';
import { reportedInputCap, serverInputAllowance } from './server-input.js';
import { editJson, UneditableBodyError } from './json-edit.js';
import { asScriptRequest, choicesOf, maxOutputOf, openaiBudgetError, openaiError, openaiRetryLater, limitFieldOf, outputLimitField, parseOpenAiRequest, withOutputLimit, withStreamUsage, type ChatRequest, type OpenAiApi } from './openai-wire.js';
import { NOT_UTF8 } from './request.js';
import { priceFor } from './prices.js';
import { forwardOpenAi } from './providers/openai.js';
import { stripUsageChunks } from './openai-strip.js';
import { withClientLimitEcho } from './responses-limit-echo.js';
import { scriptedOpenAiReply } from './providers/scripted-openai.js';
import { noScriptMessage } from './providers/scripted.js';
import { queryOf, type GatewayRequest, type Reply } from './reply.js';
import type { ModelScript } from './script.js';
import type { GatewayStore } from './gateway.js';
import { DEFAULT_RETRY, KeyRing, withRetries, type RetryPolicy } from './retry.js';

/** What the OpenAI routes share with the rest of the gateway. */
export interface OpenAiRouteDeps {
  store: GatewayStore;
  config: GatewayConfig;
  log: Logger;
  scriptFor: (job: JobRow) => Promise<ModelScript | null>;
  /** Model routes and prices (configuration overlaid with the API's). */
  directory: ModelDirectory;
  /** A call of `job` was refused because its tree is out of budget (not only by calls in flight): the refusal's message (gateway.ts). */
  onBudgetExhausted?: (job: JobRow, message: string, needMicros: number, needCall?: NeedCall) => Promise<void>;
  /** The text a budget refusal of `job` answers with (gateway.ts: without top-up advice for an agent that fails on budget). Default: `message`. */
  budgetText?: (job: JobRow, message: string) => string;
  /** Job-token lookup and throttled rejection logs, shared with the node adapter (default: its own). */
  callAuth?: CallAuth;
  /** A call of a job a top-up resumed was recorded (gateway.ts GatewayOptions.onResumedCallRecorded; errors handled there). */
  resumedCall?: (job: JobRow) => void;
}

/** The keys of a provider with no OpenAI-format upstream here (scripted; or refused as not configured). */
const NO_KEYS = new KeyRing([]);

/**
 * `POST /v1/chat/completions` and `POST /v1/responses` (OpenAI wire formats, streamed or not),
 * with the same rules as `/v1/messages`: a live job token (`Authorization: Bearer`, or
 * x-api-key) else 401 `invalid_api_key` (a job paused for budget: the budget refusal); a malformed body → 400 `invalid_request_error` naming
 * the field, recorded as refused; the worst case reserved against the tree budget first
 * (server-side web searches included: a Responses `web_search` tool, or the one search per
 * call of a Chat Completions search model, worst-case.ts; the output limit at most the model's
 * maximum output, and without one the default 32,000 or that maximum when lower, max-output.ts), a call
 * that does not fit even with no call in flight → 429 `insufficient_quota` (what Codex does
 * not retry) naming the budget, recorded as refused, and the job paused; one kept out only by
 * calls in flight waits up to `config.budgetWaitMs`, then → 429 `rate_limit_exceeded` with
 * retry-after (retried; the job keeps running; M2, budget-wait.ts); then served by the configured upstream
 * (`openai`/`openai-compatible`) or the scripted model, metered (usage from the JSON body,
 * the final usage chunk, or `response.completed`; a 2xx without them, a 204 or an empty body
 * included, passes on as sent and is charged an estimate, meter.ts), and settled.
 * A model whose provider has no key/URL here → 400 `provider_not_configured` naming the
 * setting, not retried, the upstream untouched (the row names the provider the route named).
 * A body the adapter could not decode (content-encoding, body-refusal.ts), no script for the
 * scripted model (400 `no_script`) and a script that fails to load (500 `script_error`) are
 * recorded as refused too; a refused body's row names the body's model when it names a valid
 * one (refused-model.ts). An upstream 401/403, 402 or 429 `insufficient_quota` (the provider
 * refused the server's own key, or its account for billing) fails over to the ring's next key
 * (retry.ts); on every key tried → 500 `server_error` (`upstream_auth_failed`,
 * `upstream_billing_refused`) with `x-should-retry: false`, recorded with the upstream status
 * (upstream-auth.ts gatewayKeyRefusal). Other upstream failures, rate-limit 429s included, are
 * retried as in retry.ts (keys rotate).
 * Chat streams the client did not ask usage for get `stream_options.include_usage` added
 * upstream and the usage chunk removed from what the client sees.
 */
export function openAiRoutes(d: OpenAiRouteDeps): { chat: (req: GatewayRequest) => Promise<Reply>; responses: (req: GatewayRequest) => Promise<Reply> } {
  // one key rotation per OpenAI-format upstream (config.ts: openai, and openaiSecond when both are set)
  const rings = new Map<string, KeyRing>();
  for (const u of [d.config.openai, d.config.openaiSecond]) if (u) rings.set(u.provider, new KeyRing(u.apiKeys));
  const callAuth = d.callAuth ?? new CallAuth(d.store);
  const retryPolicy: RetryPolicy = { ...DEFAULT_RETRY, ...d.config.retry };
  /** A call of a job paused for budget: the budget refusal (429 insufficient_quota), recorded as refused (with the model the body names). */
  const refusePaused = async (job: JobRow, request: GatewayRequest, api: OpenAiApi, startedAt: number): Promise<Reply> => {
    const ctx: CallContext = { store: d.store, prices: d.config.prices, log: d.log, job, provider: d.config.openai?.provider ?? 'scripted', requestModel: 'unknown', streamed: false, requestBytes: request.bodyBytes, startedAt, api };
    return openaiBudgetError(await refusePausedCall(d.store, ctx, 429, request.body, { routes: d.directory, fallback: d.config.openai?.provider ?? 'scripted' }));
  };
  const route = (api: OpenAiApi, path: string) => async (request: GatewayRequest): Promise<Reply> => {
    const startedAt = Date.now();
    // found before the body was read (node adapter): no second lookup, no await
    const preAuth = callAuth.of(request, openaiTokenOf);
    const auth = preAuth instanceof Promise ? await preAuth : preAuth;
    if ('missing' in auth || 'unknown' in auth) callAuth.logRejected(d.log, auth, request.path);
    if ('missing' in auth) return openaiError(401, 'invalid_request_error', missingTokenMessage(request.headers, 'openai'), 'invalid_api_key');
    if ('unknown' in auth) return openaiError(401, 'invalid_request_error', 'invalid job token: unknown, or its job is no longer running', 'invalid_api_key');
    if ('pausedForBudget' in auth) return refusePaused(auth.pausedForBudget, request, api, startedAt);
    const job = auth.job;
    let raw: Uint8Array = request.body;
    const fallback = d.config.openai?.provider ?? 'scripted';
    const ctx: CallContext = {
      store: d.store,
      prices: d.config.prices,
      log: d.log,
      job,
      provider: fallback,
      requestModel: 'unknown',
      streamed: false,
      requestBytes: request.bodyBytes,
      startedAt,
      api,
      usageFromBody: usageFromOpenAiBody,
      streamReader: () => new OpenAiStreamReader(),
    };
    if (d.resumedCall && job.pausedNeedMicros != null) ctx.onRecorded = d.resumedCall;
    const undecoded = bodyRefusalOf(request);
    if (undecoded) {
      // a content-encoding the adapter could not undo (node-adapter.ts): no model to name
      ctx.provider = await refusedProvider(d.directory, UNKNOWN_MODEL, fallback);
      await recordRefused(ctx, undecoded.status, undecoded.reason);
      return bodyRefusalReply(request.path, undecoded);
    }
    const limit = d.config.maxRequestBytes ?? MAX_REQUEST_BYTES;
    if (request.bodyBytes > limit) {
      ctx.provider = await refusedProvider(d.directory, UNKNOWN_MODEL, fallback);
      await recordRefused(ctx, 413, 'too_large');
      return openaiError(413, 'invalid_request_error', bodyTooLargeMessage(request, limit), 'request_too_large');
    }
    const text = request.body.toString('utf8');
    const parsed = isUtf8(request.body) ? parseOpenAiRequest(api, text) : { error: NOT_UTF8, param: null };
    if ('error' in parsed) {
      // the model the body names, when it names one, and whether it streams (refused-model.ts)
      const named = requestNamedIn(text);
      ctx.requestModel = named.model;
      ctx.streamed = named.streamed;
      ctx.provider = await refusedProvider(d.directory, ctx.requestModel, fallback);
      await recordRefused(ctx, 400, 'invalid_request');
      return openaiError(400, 'invalid_request_error', parsed.error, null, parsed.param);
    }
    const req = parsed.request;
    ctx.requestModel = req.model;
    ctx.streamed = req.stream === true;
    const provider = await d.directory.providerFor(req.model, fallback);
    ctx.prices = await d.directory.prices();
    if (provider === null) {
      await recordRefused(ctx, 404, 'unknown_model');
      return openaiError(404, 'invalid_request_error', `The model ${JSON.stringify(req.model)} does not exist: no model route matches it (see flotilla models list)`, 'model_not_found', 'model');
    }
    // the provider the route named, in the rows of the refusals below too
    ctx.provider = provider;
    if (provider === 'anthropic') {
      await recordRefused(ctx, 400, 'wrong_format');
      return openaiError(400, 'invalid_request_error', wrongFormatMessage(req.model, provider, 'openai', providerConfigured(d.config, provider)), null, 'model');
    }
    const upstream = openAiUpstreamOf(d.config, provider);
    const keys = rings.get(provider) ?? NO_KEYS;
    if (provider !== 'scripted' && (upstream === undefined || (provider === 'openai' && keys.size === 0))) {
      // Nothing reaches an upstream without its key or URL. Not a 5xx: Codex retries those up
      // to 30 times whatever the headers say (harness-facts.md), and a retry cannot fix
      // configuration; 400 (+ x-should-retry: false for the SDKs) is one request.
      await recordRefused(ctx, 400, 'provider_not_configured');
      const res = openaiError(400, 'invalid_request_error', providerNotConfiguredMessage(req.model, provider), 'provider_not_configured', 'model');
      res.headers['x-should-retry'] = 'false';
      return res;
    }
    ctx.provider = provider;
    // The output bound reserved for: the request's limit, at most the model's maximum output,
    // or the one the gateway sets (below) when it has none (max-output.ts); times `n` choices
    // (each may use all of it).
    const outLimit = maxOutputOf(api, req);
    const price = priceFor(ctx.prices, req.model);
    const perChoice = outputBound(outLimit, price);
    const maxOut = perChoice * choicesOf(api, req);
    ctx.maxOutputTokens = maxOut;
    // Inline images count by a bound per image, not by their base64 (input-images.ts).
    const media = requestMedia(req, raw.byteLength);
    const images = media.images;
    if (images.images > 0) ctx.requestBytes = estimateBytes(raw.byteLength, images);
    // server tools whose results enter the context (server-input.ts): charged as reported, an allowance reserved
    const serverInput = serverInputAllowance(req, api, media.byUrl);
    ctx.maxInputTokens = reportedInputCap(raw.byteLength, images.images, serverInput);
    const worst = callWorstCase(ctx, price, raw.byteLength, maxOut, images, webSearchBound(req, api), serverInput, api === 'openai-responses' ? toolFeeBound(req) : null);
    const pastCap = worstPastAnyBudget(worst, api);
    if (pastCap !== null) {
      await recordRefused(ctx, 400, 'invalid_request');
      return openaiError(400, 'invalid_request_error', pastCap);
    }
    const held = await reserveOrWait(d.store, job, worst.micros, { now: startedAt, ttlMs: d.config.reservationTtlMs, signal: request.signal, call: worst.call, waitMs: d.config.budgetWaitMs });
    if ('refused' in held) {
      if (held.stopped) {
        await recordRefused(ctx, 503, 'shutting_down');
        return shuttingDown(request.path);
      }
      if (held.pausedJob) return openaiBudgetError(await refusePausedWhileWaiting(d.store, ctx, held.pausedJob, 429, worst.micros));
      const abandoned = abandonedWait(held);
      if (abandoned) {
        await recordRefused(ctx, abandoned.status, abandoned.refused);
        const reply = openaiError(502, 'server_error', abandoned.message);
        reply.headers['x-should-retry'] = 'false';
        return reply;
      }
      if (held.inFlight) {
        await recordRefused(ctx, 429, 'budget_in_flight');
        d.log.info('gateway: refused a call for now: calls in flight hold its budget', { job: job.id, root: job.rootId, worst: worst.micros });
        return openaiRetryLater(inFlightMessage(job, held.budget, worst.micros, false), IN_FLIGHT_RETRY_AFTER_S);
      }
      await recordRefused(ctx, 429, 'budget');
      try {
        await d.onBudgetExhausted?.(job, held.refused, worst.resumeMicros, worst.resumeCall);
      } catch (err) {
        d.log.error('gateway: budget-exhausted handler failed', { job: job.id, error: (err as Error).message });
      }
      return openaiBudgetError(d.budgetText?.(job, held.refused) ?? held.refused);
    }
    ctx.reservation = held;
    try {
      // Chat streams: ask the upstream for usage when the client did not.
      const chat = req as ChatRequest;
      const addUsage = api === 'openai-chat' && ctx.streamed && chat.stream_options?.include_usage !== true;
      if (provider === 'scripted' || !upstream) {
        let script: ModelScript | null;
        try {
          script = await d.scriptFor(job);
        } catch (err) {
          // recorded as refused; the reservation settled at $0 with the row
          await recordRefused(ctx, 500, 'script_error');
          return openaiError(500, 'server_error', `scripted model: the script for agent "${job.agent}" could not be loaded: ${(err as Error).message}`);
        }
        if (!script) {
          // recorded as refused; the reservation settled at $0 with the row
          await recordRefused(ctx, 400, 'no_script');
          return openaiError(400, 'invalid_request_error', noScriptMessage(job.agent, req.model), 'no_script');
        }
        // The scripted model always reports usage to the meter; the client sees it only when asked.
        const res = await meteredReply(scriptedOpenAiReply(api, script, job, asScriptRequest(api, req), ctx.streamed, true), ctx, request.signal);
        return addUsage ? stripUsageChunks(res) : res;
      }
      // No output limit, or one past the model's maximum output: the upstream gets the one
      // reserved for, or it could write (and bill) past it (max-output.ts).
      try {
        if (outLimit === undefined) raw = withOutputLimit(raw, req, outputLimitField(api, provider), perChoice);
        else if (perChoice < outLimit) raw = editJson(raw, [[[limitFieldOf(api, req)], perChoice]]);
        if (addUsage) raw = withStreamUsage(raw, chat);
      } catch (err) {
        if (!(err instanceof UneditableBodyError)) throw err;
        // recorded as refused; the reservation settled at $0 with the row
        await recordRefused(ctx, 400, 'invalid_request');
        return openaiError(400, 'invalid_request_error', err.message, 'invalid_request', err.param);
      }
      let res: Reply;
      try {
        const body = raw;
        // a 429 `insufficient_quota` refuses the key (upstream-auth.ts gatewayKeyRefusal: another key, then a 500 for the admin); other 429s are rate limits, retried
        // a non-streamed reply is read to its end when the client goes away (upstream-signal.ts)
        const signal = upstreamSignal(request.signal, ctx.streamed);
        const out = await withRetries((apiKey) => forwardOpenAi({ baseUrl: upstream.baseUrl, apiKey, path: path + queryOf(request.pathAndQuery), headers: request.headers, body, signal }), keys, retryPolicy, upstreamRetryOptions(ctx, request.signal));
        res = out.response;
        logRetried(ctx, out);
      } catch (err) {
        // Too large, timed out, broken or unreachable: recorded once (upstream-failure.ts), never retried by the harness.
        const failed = await recordUpstreamFailure(ctx, err, request.signal);
        const reply = openaiError(failed.status, 'server_error', failed.message);
        reply.headers['x-should-retry'] = failed.retry === true ? 'true' : 'false';
        if (failed.retryAfterS !== undefined) reply.headers['retry-after'] = String(failed.retryAfterS);
        return reply;
      }
      // the provider refused the server's own key (a 500 for the admin, not a 401 for the job), or
      // redirected (a client following it would carry the job's token elsewhere): upstream-redirect.ts
      const unpassed = await unpassedReply(res, ctx, 'openai', request.signal);
      if (unpassed) return unpassed;
      const metered = await meteredReply(res, ctx, request.signal);
      if (addUsage) return stripUsageChunks(metered);
      // a Responses limit the gateway set is echoed as the client's own (responses-limit-echo.ts)
      const limitSet = outLimit === undefined || perChoice < outLimit;
      return api === 'openai-responses' && limitSet ? withClientLimitEcho(metered, outLimit ?? null) : metered;
    } catch (err) {
      await held.settle(0);
      throw err;
    }
  };
  return { chat: route('openai-chat', '/chat/completions'), responses: route('openai-responses', '/responses') };
}
