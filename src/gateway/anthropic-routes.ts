import { isUtf8 } from 'node:buffer';
import { refusePausedCall, refusePausedWhileWaiting } from './job-auth.js';
import { messagesTokenOf, missingTokenMessage, type CallAuth } from './call-auth.js';
import type { Logger } from '../core/log.js';
import type { JobRow } from '../store/types.js';
import { providerConfigured, type GatewayConfig } from './config.js';
import { anthropicError, providerNotConfiguredMessage, shuttingDown, wrongFormatMessage } from './errors.js';
import { budgetMessage, reserve } from './budget.js';
import { outputBound } from './max-output.js';
import { editJson, UneditableBodyError } from './json-edit.js';
import { abandonedWait, inFlightMessage, IN_FLIGHT_RETRY_AFTER_S, refusedByCallsInFlight, reserveOrWait, type BudgetRefusal } from './budget-wait.js';
import { worstPastAnyBudget } from './worst-past-cap.js';
import { callWorstCase, countedCallResumeMicros, countedNeedCall, worstCaseMicros, type NeedCall } from './worst-case.js';
import { webSearchBound } from './server-tools.js';
import { estimateBytes, requestMedia } from './input-images.js';
import { meteredReply, recordRefused, recordUnreachable, type CallContext } from './meter.js';
import { reportedInputCap, serverInputAllowance } from './server-input.js';
import { anthropicToolPromptTokens } from './prompt-allowance.js';
import { priceFor } from './prices.js';
import { DEFAULT_RETRY, KeyRing, withRetries, type RetryPolicy } from './retry.js';
import type { ModelDirectory } from './model-directory.js';
import { forwardAnthropic } from './providers/anthropic.js';
import { noScriptMessage, scriptedMessagesReply } from './providers/scripted.js';
import { jsonReply, type GatewayRequest, type Reply } from './reply.js';
import { bodyRefusalOf, bodyRefusalReply, bodyTooLargeMessage } from './body-refusal.js';
import { refusedProvider, requestNamedIn, UNKNOWN_MODEL } from './refused-model.js';
import { meterUnbilled, unbilled } from './unbilled-call.js';
import { logRetried, upstreamRetryOptions } from './upstream-auth.js';
import { unpassedReply } from './upstream-redirect.js';
import { countFailureMessage, recordUpstreamFailure } from './upstream-failure.js';
import { upstreamSignal } from './upstream-signal.js';
import { messagesCallProblem, NOT_UTF8, parseMessagesRequest, type MessagesRequest } from './request.js';
import type { ModelScript } from './script.js';
import type { GatewayStore } from './gateway.js';

/** What the Anthropic routes share with the rest of the gateway (gateway.ts). */
export interface AnthropicRouteDeps {
  store: GatewayStore;
  config: GatewayConfig;
  log: Logger;
  scriptFor: (job: JobRow) => Promise<ModelScript | null>;
  /** Model routes and prices (configuration overlaid with the API's). */
  directory: ModelDirectory;
  /** Job-token lookup and throttled rejection logs, shared with the node adapter. */
  callAuth: CallAuth;
  /** Largest request body, bytes (a larger one: 413). */
  limit: number;
  /** A call of `job` was refused because its tree is out of budget: the control plane pauses the job (gateway.ts; errors logged there). */
  budgetExhausted: (job: JobRow, message: string, needMicros: number, needCall?: NeedCall) => Promise<void>;
  /** The text a budget refusal of `job` answers with (gateway.ts: without top-up advice for an agent that fails on budget). Default: `message`. */
  budgetText?: (job: JobRow, message: string) => string;
  /** A call of a job a top-up resumed was recorded (gateway.ts GatewayOptions.onResumedCallRecorded; errors handled there). */
  resumedCall?: (job: JobRow) => void;
}

/**
 * `POST /v1/messages` and `POST /v1/messages/count_tokens`, the Anthropic Messages wire format
 * (streamed or not); the rules they follow are listed on createGateway (gateway.ts). A route
 * never rejects for bad input: every refusal is a reply in Anthropic's error shape. Every call
 * of a job gets one ledger row: a served count_tokens call too (api `anthropic-count-tokens`,
 * not billed: no tokens, usage known, $0, unbilled-call.ts), and a scripted model without a
 * script for the agent (400, refused `no_script`; one whose script fails to load: 500,
 * `script_error`). An upstream 401/403, 402 `billing_error` or 400 "credit balance is too low"
 * (the provider refused the server's own key, or its account for billing) fails over to the ring's next key (retry.ts); on every key
 * tried, it reaches the job as 500 `api_error` with `x-should-retry: false`, recorded with the
 * upstream status (upstream-auth.ts gatewayKeyRefusal): never as the 402 of the job's own budget.
 */
export function anthropicRoutes(d: AnthropicRouteDeps): { messages: (req: GatewayRequest) => Promise<Reply>; countTokens: (req: GatewayRequest) => Promise<Reply> } {
  const { store, config, log, directory, callAuth, limit, budgetExhausted } = d;
  // Several upstream keys (comma-separated) rotate per upstream call; see retry.ts. Every
  // upstream call takes exactly one key from a ring (never the configured text itself).
  const anthropicKeys = new KeyRing([config.anthropicApiKey ?? '']);
  const retryPolicy: RetryPolicy = { ...DEFAULT_RETRY, ...config.retry };

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

  /**
   * Records the refusal of a call, tells the control plane (the pause stores `resumeNeed`, µ$:
   * worst-case.ts CallWorstCase.resumeMicros, and `needCall`, what it was worked out from), and
   * answers 402 billing_error (no retry).
   */
  const refuseForBudget = async (ctx: CallContext, message: string, resumeNeed: number, needCall?: NeedCall): Promise<Reply> => {
    await recordRefused(ctx, 402, 'budget');
    await budgetExhausted(ctx.job, message, resumeNeed, needCall);
    log.info('gateway: refused a call: tree out of budget', { job: ctx.job.id, root: ctx.job.rootId });
    return anthropicError(402, 'billing_error', d.budgetText?.(ctx.job, message) ?? message, { retry: false });
  };

  /**
   * The refusal of a call costing up to `worst` µ$: its wait cut short (client gone, job ended)
   * → budget-wait.ts abandonedWait; out of budget → {@link refuseForBudget};
   * kept out only by calls in flight (after the wait) → recorded as refused (`budget_in_flight`),
   * the job left running, 429 `rate_limit_error` with retry-after (M2).
   */
  const refuse = async (ctx: CallContext, r: BudgetRefusal, worst: number, resumeNeed: number, needCall?: NeedCall): Promise<Reply> => {
    if (r.pausedJob) return anthropicError(402, 'billing_error', await refusePausedWhileWaiting(store, ctx, r.pausedJob, 402, worst), { retry: false });
    const abandoned = abandonedWait(r);
    if (abandoned) {
      await recordRefused(ctx, abandoned.status, abandoned.refused);
      return anthropicError(502, 'api_error', abandoned.message, { retry: false });
    }
    if (!r.inFlight) return refuseForBudget(ctx, r.refused, resumeNeed, needCall);
    await recordRefused(ctx, 429, 'budget_in_flight');
    log.info('gateway: refused a call for now: calls in flight hold its budget', { job: ctx.job.id, root: ctx.job.rootId, worst });
    return anthropicError(429, 'rate_limit_error', inFlightMessage(ctx.job, r.budget, worst), { retry: true, retryAfterS: IN_FLIGHT_RETRY_AFTER_S });
  };

  /**
   * What `/v1/messages` and `/v1/messages/count_tokens` check before any budget or upstream
   * work, in this order, each refusal in Anthropic's shape and (past authentication) recorded
   * as refused under `api`: the job token (401, not recorded: no job's call; a job paused for
   * budget gets the 402 budget refusal instead), a body the adapter could not decode (its
   * content-encoding: 400 `bad_encoding`, 413 `too_large`, 415 `unsupported_encoding`;
   * body-refusal.ts), the body size (413), the body (400 naming the field, the row naming the
   * body's model when it names a valid one, refused-model.ts; bytes that are not UTF-8; on
   * `anthropic-messages` a body without `max_tokens` or with no message too: request.ts
   * messagesCallProblem), the model's route
   * (404 unknown model; 400 for a model of an OpenAI-format provider) and the provider's key
   * (500 `api_error`, not retried, naming ANTHROPIC_API_KEY).
   */
  const admit = async (req: GatewayRequest, startedAt: number, api: string): Promise<Reply | { ctx: CallContext; request: MessagesRequest }> => {
    // found before the body was read (node adapter): no second lookup, no await
    const preAuth = callAuth.of(req, messagesTokenOf);
    const auth = preAuth instanceof Promise ? await preAuth : preAuth;
    if ('missing' in auth) {
      callAuth.logRejected(log, auth, req.path);
      return anthropicError(401, 'authentication_error', missingTokenMessage(req.headers, 'anthropic'), { retry: false });
    }
    if ('unknown' in auth) {
      callAuth.logRejected(log, auth, req.path);
      return anthropicError(401, 'authentication_error', 'invalid job token: unknown, or its job is no longer running', { retry: false });
    }
    if ('pausedForBudget' in auth) {
      const message = await refusePausedCall(store, earlyContext(auth.pausedForBudget, req, startedAt, api), 402, req.body, { routes: directory, fallback: config.provider });
      return anthropicError(402, 'billing_error', message, { retry: false });
    }
    const job = auth.job;
    const undecoded = bodyRefusalOf(req);
    if (undecoded) {
      // a content-encoding the adapter could not undo (node-adapter.ts): no model to name
      const early = earlyContext(job, req, startedAt, api);
      early.provider = await refusedProvider(directory, UNKNOWN_MODEL, config.provider);
      await recordRefused(early, undecoded.status, undecoded.reason);
      return bodyRefusalReply(req.path, undecoded);
    }
    if (req.bodyBytes > limit) {
      const early = earlyContext(job, req, startedAt, api);
      early.provider = await refusedProvider(directory, UNKNOWN_MODEL, config.provider);
      await recordRefused(early, 413, 'too_large');
      return anthropicError(413, 'request_too_large', bodyTooLargeMessage(req, limit), { retry: false });
    }
    const text = req.body.toString('utf8');
    const parsed = isUtf8(req.body) ? parseMessagesRequest(text) : { error: NOT_UTF8 };
    if ('error' in parsed) {
      const early = earlyContext(job, req, startedAt, api);
      // the model the body names, when it names one, and whether it streams (refused-model.ts)
      const named = requestNamedIn(text);
      early.requestModel = named.model;
      early.streamed = named.streamed;
      early.provider = await refusedProvider(directory, early.requestModel, config.provider);
      await recordRefused(early, 400, 'invalid_request');
      return anthropicError(400, 'invalid_request_error', parsed.error, { retry: false });
    }
    const request = parsed.request;
    const problem = api === 'anthropic-messages' ? messagesCallProblem(request) : null;
    if (problem !== null) {
      // The Messages API requires max_tokens and a message (a 400 invalid_request_error upstream):
      // without max_tokens the call has no output bound to reserve; refused here, not forwarded.
      const early = earlyContext(job, req, startedAt, api);
      early.requestModel = request.model;
      early.provider = await refusedProvider(directory, request.model, config.provider);
      await recordRefused(early, 400, 'invalid_request');
      return anthropicError(400, 'invalid_request_error', problem, { retry: false });
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
    if (d.resumedCall && job.pausedNeedMicros != null) ctx.onRecorded = d.resumedCall;
    if (provider === null) {
      await recordRefused(ctx, 404, 'unknown_model');
      return anthropicError(404, 'not_found_error', `unknown model ${JSON.stringify(request.model)}: no model route matches it (see flotilla models list)`, { retry: false });
    }
    if (provider !== 'anthropic' && provider !== 'scripted') {
      await recordRefused(ctx, 400, 'wrong_format');
      return anthropicError(400, 'invalid_request_error', wrongFormatMessage(request.model, provider, 'anthropic', providerConfigured(config, provider)), { retry: false });
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
    const { ctx, request } = admitted;
    // Not billed, but a spent tree gets the budget error here too (1 µ$ must still fit); a tree
    // whose room only calls in flight hold is not spent: counted (M2). The pause's need is the
    // counted call's worst case (worst-case.ts countedCallResumeMicros).
    const held = await reserve(store, ctx.job, 1, startedAt);
    if ('refused' in held) {
      if (!refusedByCallsInFlight(held.budget, 1)) {
        // its text names that call's worst case too (it said $0.000001, and a top-up of that resumed nothing: tester finding)
        const price = priceFor(ctx.prices, request.model);
        const maxOut = outputBound(request.max_tokens, price);
        const images = requestMedia(request, req.body.byteLength).images;
        const message = budgetMessage(ctx.job, held.budget, worstCaseMicros(req.body.byteLength, maxOut, price, images), 'the Messages call it counts may cost up to');
        return refuseForBudget(ctx, message, countedCallResumeMicros(req.body.byteLength, maxOut, price, images), countedNeedCall(request.model, req.body.byteLength, maxOut, images));
      }
    } else await held.settle(0);
    // Recorded as every call is, but never billed: no tokens, usage known, $0 (unbilled-call.ts).
    unbilled(ctx);
    if (ctx.provider === 'anthropic') {
      let res: Reply;
      try {
        const out = await withRetries(
          (apiKey) => forwardAnthropic({ baseUrl: config.anthropicBaseUrl, apiKey, pathAndQuery: req.pathAndQuery, method: 'POST', headers: req.headers, body: req.body, signal: req.signal }),
          anthropicKeys,
          retryPolicy,
          upstreamRetryOptions(ctx, req.signal),
        );
        res = out.response;
      } catch (err) {
        log.warn('gateway: token count failed upstream', { job: ctx.job.id, error: (err as Error).message });
        // nothing is billed, even when the client went away: status 0, no tokens
        await recordUnreachable(ctx);
        return anthropicError(502, 'api_error', countFailureMessage('anthropic', err, req.signal.aborted), { retry: false });
      }
      return (await unpassedReply(res, ctx, 'anthropic', req.signal)) ?? meterUnbilled(res, ctx, req.signal);
    }
    return meterUnbilled(jsonReply(200, { input_tokens: Math.ceil(req.body.byteLength / 4) }), ctx, req.signal);
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
    const media = requestMedia(request, req.body.byteLength);
    const images = media.images;
    if (images.images > 0) ctx.requestBytes = estimateBytes(req.body.byteLength, images);
    // server tools whose results enter the context (server-input.ts): charged as reported, an allowance reserved
    const serverInput = serverInputAllowance(request, 'anthropic-messages', media.byUrl);
    ctx.maxInputTokens = reportedInputCap(req.body.byteLength, images.images, serverInput);
    // max_tokens, at most the model's maximum output (max-output.ts)
    const price = priceFor(ctx.prices, request.model);
    const maxOut = outputBound(request.max_tokens, price);
    ctx.maxOutputTokens = maxOut;
    if (ctx.provider === 'anthropic' && request.max_tokens !== undefined && maxOut < request.max_tokens) {
      // past the model's maximum output: the upstream gets the bound reserved for, or it could write (and bill) past it (max-output.ts)
      try {
        req.body = editJson(req.body, [[['max_tokens'], maxOut]]);
      } catch (err) {
        if (!(err instanceof UneditableBodyError)) throw err;
        await recordRefused(ctx, 400, 'invalid_request');
        return anthropicError(400, 'invalid_request_error', err.message, { retry: false });
      }
    }
    // server-side web search (H4): the searches the request allows are reserved for too
    // the tool-use system prompt and Anthropic-defined tools' definitions, billed but not in the body (prompt-allowance.ts)
    const worst = callWorstCase(ctx, price, req.body.byteLength, maxOut, images, webSearchBound(request, 'anthropic-messages'), serverInput, null, anthropicToolPromptTokens(request));
    const pastCap = worstPastAnyBudget(worst, 'anthropic-messages');
    if (pastCap !== null) {
      await recordRefused(ctx, 400, 'invalid_request');
      return anthropicError(400, 'invalid_request_error', pastCap, { retry: false });
    }
    const held = await reserveOrWait(store, job, worst.micros, { now: startedAt, ttlMs: config.reservationTtlMs, signal: req.signal, call: worst.call, waitMs: config.budgetWaitMs });
    if ('refused' in held) {
      if (!held.stopped) return refuse(ctx, held, worst.micros, worst.resumeMicros, worst.resumeCall);
      await recordRefused(ctx, 503, 'shutting_down');
      return shuttingDown(req.path);
    }
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
        script = await d.scriptFor(job);
      } catch (err) {
        log.error('gateway: could not load the model script', { job: job.id, agent: job.agent, error: (err as Error).message });
        // recorded as refused; the reservation settled at $0 with the row
        await recordRefused(ctx, 500, 'script_error');
        return anthropicError(500, 'api_error', `scripted model: the script for agent "${job.agent}" could not be loaded: ${(err as Error).message}`, { retry: false });
      }
      if (!script) {
        // A job must not "succeed" on a model that never ran: refuse, not retried (issue 2);
        // recorded as refused, the reservation settled at $0 with the row.
        await recordRefused(ctx, 400, 'no_script');
        return anthropicError(400, 'invalid_request_error', noScriptMessage(job.agent, request.model), { retry: false });
      }
      res = scriptedMessagesReply(script, job, request);
    } else {
      const upstream = upstreamSignal(req.signal, ctx.streamed);
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
              // a non-streamed reply is read to its end when the client goes away (upstream-signal.ts)
              signal: upstream,
            }),
          anthropicKeys,
          retryPolicy,
          upstreamRetryOptions(ctx, req.signal),
        );
        res = out.response;
        logRetried(ctx, out);
      } catch (err) {
        // Too large, timed out, broken or unreachable: recorded once (upstream-failure.ts), never retried by the harness.
        const failed = await recordUpstreamFailure(ctx, err, req.signal);
        return anthropicError(failed.status, 'api_error', failed.message, { retry: failed.retry === true, ...(failed.retryAfterS !== undefined ? { retryAfterS: failed.retryAfterS } : {}) });
      }
      // the provider refused the server's own key (a 500 for the admin, not a 401 for the job), or
      // redirected (a client following it would carry the job's token elsewhere): upstream-redirect.ts
      const unpassed = await unpassedReply(res, ctx, 'anthropic', req.signal);
      if (unpassed) return unpassed;
    }
    return meteredReply(res, ctx, req.signal);
  };

  return { messages, countTokens };
}
