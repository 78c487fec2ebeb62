import type { IncomingMessage, ServerResponse } from 'node:http';
import { Hono } from 'hono';
import { silentLogger, type Logger } from '../core/log.js';
import { CallAuth } from './call-auth.js';
import { KeyMask } from './key-mask.js';
import type { NeedCall } from './worst-case.js';
import type { JobRow, Store } from '../store/types.js';
import { MAX_REQUEST_BYTES, openAiUpstreamOf, type GatewayConfig } from './config.js';
import { internalError, methodNotAllowed, noSuchEndpoint, shuttingDown } from './errors.js';
import { anthropicRoutes } from './anthropic-routes.js';
import { openAiRoutes } from './openai-routes.js';
import { isModelsPath, serveModels } from './list-models.js';
import { ModelDirectory } from './model-directory.js';
import { UpstreamModels } from './upstream-models.js';
import type { GatewayRequest, Reply } from './reply.js';
import { nodeHandler } from './node-adapter.js';
import { abortJobCalls, liveCallJobs, abortStoreCalls } from './live-calls.js';
import { callClosed, callOpened, openCallCount, stopTakingCalls, untilNoOpenCalls } from './open-calls.js';
import { failedOnBudget, wakeBudgetWaiters } from './budget.js';
import { fromRequest, toResponse } from './web-adapter.js';
import type { ModelScript } from './script.js';

/** The Store methods the gateway uses (a full `Store` fits). */
export type GatewayStore = Pick<Store, 'findJobByTokenHash' | 'recordModelCall' | 'reserveBudget' | 'settleBudget' | 'listModelRoutes' | 'listModelPrices'> &
  Partial<Pick<Store, 'findPausedJobByTokenHash' | 'getJob' | 'getTreeBudget' | 'getJobBudget' | 'writesInTurnOrder' | 'budgetResumeHolds'>>;

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
   * `onBudgetExhausted`). `message` is the refusal's text; `needMicros` the refused call's worst
   * case in µ$ with room for a resumed harness's larger request (worst-case.ts
   * CallWorstCase.resumeMicros; 1 for `count_tokens`), kept with the pause for the resume rule
   * (store/budget-resume.ts), and `needCall`, what that need was worked out from (model, tokens:
   * worst-case.ts NeedCall), kept so the need follows price changes. Errors are logged.
   */
  onBudgetExhausted?: (job: JobRow, message: string, needMicros: number, needCall?: NeedCall) => Promise<void>;
  /**
   * True when `job`'s agent says `onBudgetExhausted: fail`: its budget refusals then end in the
   * sentence its job's error has (budget.ts failedOnBudget), without the top-up advice no
   * top-up would follow (fresh-user finding: the harness's transcript advised one). Default: never.
   */
  failsOnBudget?: (job: JobRow) => boolean;
  /**
   * Called (not awaited) once a call of `job` is recorded when the job was resumed by a budget
   * top-up and still holds the room of the call that paused it (`job.pausedNeedMicros` set on a
   * live job: store/budget-resume.ts resumedNeedHolds): the control plane ends the hold and
   * checks whether the freed room resumes another paused job (server/budget-pause.ts
   * resumeHoldEnder). Errors are logged.
   */
  onResumedCallRecorded?: (job: JobRow) => Promise<void>;
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
   * with the usage seen so far or the estimate, marked as one (live-calls.ts). With
   * `beforeAttempt`, only the calls of its earlier attempts (a newer attempt runs). @returns how many.
   */
  abortJob(jobId: number, beforeAttempt?: number): number;
  /** The jobs with model calls live in this gateway, each with the attempts they belong to (live-calls.ts liveCallJobs; server/live-call-fence.ts). */
  liveJobs(): Map<number, Set<number>>;
  /**
   * Lets the calls in flight end before the server stops (its store closes next): from now on a
   * new model call gets a retryable 503 (errors.ts shuttingDown), nothing reserved; the calls
   * already reserved are waited for, up to `graceMs` (default {@link DRAIN_GRACE_MS}), until
   * each is settled and its ledger row written; those still running then are aborted as a
   * cancelled job's are (settled with the usage seen so far, or the estimate, marked as one)
   * and waited for up to {@link DRAIN_ABORT_MS} more; then the streamed replies still being
   * written get up to {@link REPLY_FLUSH_MS} to send their last chunks. Never rejects.
   * @returns how many calls held a reservation when it began, and how many were aborted.
   */
  drain(graceMs?: number): Promise<{ open: number; aborted: number }>;
  /** Ends a {@link drain}'s grace period now: the calls still running are aborted and settled at once (a second Ctrl-C); called before the drain began, the drain waits for nothing. */
  hurryDrain(): void;
};

/**
 * How long a stopping server lets its model calls in flight run on, ms: 8 s, so that with the
 * aborted calls' settles the stop fits in a supervisor's 10 s before SIGKILL (`docker stop`'s
 * default; a fresh user's stop took 10.1 s with a 10 s grace and lost the calls to the SIGKILL).
 */
export const DRAIN_GRACE_MS = 8_000;

/** How long it then waits for the calls it aborted to be settled, ms: 5 s. */
export const DRAIN_ABORT_MS = 5_000;

/**
 * After a stop's calls have settled, how long the streamed replies still being written get to
 * send their last chunks before the connections close, ms (node-adapter.ts NodeHandler).
 */
export const REPLY_FLUSH_MS = 1_000;

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
 *   rotation) or estimated as bytes/4 (scripted); not billed: recorded as a $0 row of no
 *   tokens (unbilled-call.ts), so the ledger lists every call a job made.
 * - A model routed to `anthropic` with no ANTHROPIC_API_KEY → 500 `api_error`, not retried,
 *   naming the setting; the upstream sees nothing. An upstream 401/403 (the server's own key
 *   refused): that key is skipped for 60 s and the call fails over at once to another key of
 *   the rotation (one of its retries, retry.ts); when no key is left → 500 `api_error`, not
 *   retried, naming the setting an admin must fix, no key text (upstream-auth.ts).
 * - Requests on server-stored state (a file by id, a stored response, conversation or prompt)
 *   → 400 naming the field; server tools' added input is charged as reported, with an
 *   allowance reserved (server-input.ts).
 * - Every reply has the server's upstream keys masked (key-mask.ts).
 * - `POST /v1/chat/completions`, `POST /v1/responses`: the OpenAI wire formats (openai-routes.ts).
 * Every model call first reserves its worst case against the job tree's budget (budget.ts;
 * server-side web searches included, worst-case.ts); a call that does not fit even with no
 * call in flight gets 402 `billing_error` (Anthropic) / 429 `insufficient_quota` (OpenAI) with
 * `x-should-retry: false`, is recorded as refused (`budget`), and `onBudgetExhausted` runs. A
 * call kept out only by calls in flight waits up to `config.budgetWaitMs` for them to settle,
 * then gets 429 `rate_limit_error` / `rate_limit_exceeded` with `retry-after` (retryable),
 * recorded as refused (`budget_in_flight`), its job left running (M2, budget-wait.ts).
 * - `GET /v1/models`, `GET /v1/models/{id}`: the models a job can call here, in the asking
 *   client's wire format (list-models.ts); job token required, nothing metered.
 * - another method than POST on one of the routes above → 405 with `Allow: POST` (errors.ts methodNotAllowed).
 * - any other `/v1/*` → 404 in the asking client's wire format (errors.ts noSuchEndpoint).
 * - a body over `maxRequestBytes` → 413 (`request_too_large`, recorded as refused on model calls).
 * Other paths (e.g. Claude Code's `HEAD /` preconnect) are not routed here; the host app's
 * 404 answers them at once.
 * The token is never logged.
 */
export function createGateway(opts: GatewayOptions): Gateway {
  const { store, config } = opts;
  const log = opts.log ?? silentLogger;
  const limit = config.maxRequestBytes ?? MAX_REQUEST_BYTES;
  // Every configured key of every provider is masked in what reaches a job (key-mask.ts).
  const mask = new KeyMask([config.anthropicApiKey ?? '', ...(config.openai?.apiKeys ?? []), ...(config.openaiSecond?.apiKeys ?? [])]);
  const directory = opts.directory ?? new ModelDirectory(store, config.modelProviders, config.prices);
  // what an OpenAI-compatible upstream lists itself, for GET /v1/models (upstream-models.ts)
  const compatible = openAiUpstreamOf(config, 'openai-compatible');
  const upstreamModels = compatible ? new UpstreamModels(compatible, log) : null;
  // Job tokens: looked up once per call (before the body on the node path), rejections logged throttled.
  const callAuth = new CallAuth(store);

  /** The control plane's `onBudgetExhausted` (errors logged). */
  const budgetExhausted = async (job: JobRow, message: string, needMicros: number, needCall?: NeedCall): Promise<void> => {
    try {
      await opts.onBudgetExhausted?.(job, message, needMicros, needCall);
    } catch (err) {
      log.error('gateway: budget-exhausted handler failed', { job: job.id, error: (err as Error).message });
    }
    // the job's calls waiting for budget room look at it now, not at their next poll: paused,
    // its attempt spends nothing more (budget-wait.ts)
    wakeBudgetWaiters(store, job.rootId);
  };

  /** The control plane's `onResumedCallRecorded`, not awaited (errors logged). */
  const resumedCall = opts.onResumedCallRecorded
    ? (job: JobRow): void => {
        opts.onResumedCallRecorded!(job).catch((err: unknown) => log.error('gateway: resumed-call handler failed', { job: job.id, error: (err as Error).message }));
      }
    : undefined;

  /** The text a budget refusal of `job` answers with. */
  const budgetText = (job: JobRow, message: string): string => (opts.failsOnBudget?.(job) === true ? failedOnBudget(message) : message);

  const anthropic = anthropicRoutes({ store, config, log, directory, callAuth, limit, scriptFor: opts.scriptFor, budgetExhausted, budgetText, ...(resumedCall ? { resumedCall } : {}) });
  const openai = openAiRoutes({ store, config, log, directory, callAuth, scriptFor: opts.scriptFor, onBudgetExhausted: budgetExhausted, budgetText, ...(resumedCall ? { resumedCall } : {}) });
  const routes: Record<string, (req: GatewayRequest) => Promise<Reply>> = {
    '/v1/messages': anthropic.messages,
    '/v1/messages/count_tokens': anthropic.countTokens,
    '/v1/chat/completions': openai.chat,
    '/v1/responses': openai.responses,
  };

  let draining = false;
  let hurry = (): void => undefined;
  // Asked before the drain began (`up`'s second Ctrl-C while its runner still stops its jobs):
  // the drain then waits for nothing (fresh-tester finding: it waited its whole grace).
  let hurriedEarly = false;
  const handle = async (req: GatewayRequest): Promise<Reply> => {
    const route = req.method === 'POST' ? routes[req.path] : undefined;
    if (!route) {
      if (isModelsPath(req.method, req.path)) return mask.reply(await serveModels(req, { directory, config, callAuth, log, ...(upstreamModels ? { upstreamModels } : {}) }));
      return Object.hasOwn(routes, req.path) ? methodNotAllowed(req.method, req.path) : noSuchEndpoint(req.method, req.path, req.headers);
    }
    if (draining) return shuttingDown(req.path);
    // open until its route answers (a stopping server waits for it: open-calls.ts)
    callOpened(store, 'request');
    try {
      // Upstream keys never reach a job, whatever route or provider echoed them (key-mask.ts).
      return mask.reply(await route(req));
    } finally {
      callClosed(store, 'request');
    }
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
      reply = internalError(request.path);
    }
    return toResponse(reply, abort);
  };
  const app = new Hono();
  app.all('/v1/*', (c) => viaFetch(c.req.raw));
  const abortJob = (jobId: number, beforeAttempt?: number): number => {
    const n = abortJobCalls(store, jobId, 'job_ended', beforeAttempt);
    if (n > 0) log.info('gateway: aborted the live calls of an ended job', { job: jobId, calls: n });
    return n;
  };
  const node = nodeHandler(handle, limit, log, callAuth);
  const drain = async (graceMs = DRAIN_GRACE_MS): Promise<{ open: number; aborted: number }> => {
    const settled = await drainCalls(graceMs);
    // a stream's call settles just before its last chunk goes out: let that chunk reach its client
    await node.untilRepliesWritten(REPLY_FLUSH_MS);
    return settled;
  };
  const drainCalls = async (graceMs: number): Promise<{ open: number; aborted: number }> => {
    draining = true;
    // calls waiting for budget stop waiting; none reserved from now on goes upstream
    stopTakingCalls(store);
    wakeBudgetWaiters(store);
    const open = openCallCount(store);
    const hurried = new Promise<false>((resolve) => (hurry = () => resolve(false)));
    if (await Promise.race([untilNoOpenCalls(store, hurriedEarly ? 0 : graceMs), hurried])) return { open, aborted: 0 };
    const aborted = abortStoreCalls(store);
    log.warn('gateway: stopping: aborted the model calls still running', { calls: aborted, graceMs });
    if (!(await untilNoOpenCalls(store, DRAIN_ABORT_MS))) log.error('gateway: stopping: model calls still not settled; the sweeper charges them after their expiry', { calls: openCallCount(store) });
    return { open, aborted };
  };
  return Object.assign(app, { handle, abortJob, liveJobs: () => liveCallJobs(store), drain, hurryDrain: () => ((hurriedEarly = true), hurry()), node });
}
