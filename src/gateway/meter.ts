import type { Logger } from '../core/log.js';
import { callCost } from '../core/pricing.js';
import { DEFAULT_MAX_OUTPUT_TOKENS, type Reservation } from './budget.js';
import type { StreamReader } from './openai-usage.js';
import { ChunkStream } from './chunk-stream.js';
import { isEventStream, type CallSignal, type Reply } from './reply.js';
import type { JobRow, NewModelCall, Store } from '../store/types.js';
import { ratesFor } from './long-context.js';
import { priceFor, type PriceTable } from './prices.js';
import { boundedSearches, webSearchCap, withCallSearches } from './server-tools.js';
import { toolFeeCharge, type ToolFeeBound } from './tool-fees.js';
import { MAX_MODEL_NAME } from './request.js';
import { boundedUsage, estimateUsage, MAX_REPORTED_TOKENS, PROMPT_SLACK_TOKENS, StreamUsageReader, usageFromMessage, type CallUsage } from './usage.js';

/** Everything known about a call before its reply: who, what, when. */
export interface CallContext {
  store: Pick<Store, 'recordModelCall'> & Partial<Pick<Store, 'settleBudget' | 'writesInTurnOrder'>>;
  prices: PriceTable;
  log: Logger;
  job: JobRow;
  /** `anthropic`, `scripted`. */
  provider: string;
  /**
   * The model the request asked for: the call is priced by it and the ledger row names it,
   * whatever model the reply names (H2: the route and the reservation used this one; an
   * upstream naming a dearer model in its reply must not be charged at that model's rate).
   */
  requestModel: string;
  streamed: boolean;
  /** Size of the request body in bytes (the basis of estimates). */
  requestBytes: number;
  /**
   * The output bound reserved for, in tokens (max_tokens or the OpenAI equivalents, at most
   * the model's maximum output, max-output.ts, × `n` choices; absent: DEFAULT_MAX_OUTPUT_TOKENS):
   * estimates stop there, and a reported output figure past it is charged at it, marked
   * estimated (H1).
   */
  maxOutputTokens?: number;
  /**
   * The most input-side tokens (input + cache read + cache write) a correct provider can report
   * for this request (server-input.ts reportedInputCap: usage.ts inputTokensBound — body bytes +
   * slack + a bound per image —, or for a request whose server tools add to the context, such
   * as web search or web fetch, usage.ts MAX_REPORTED_TOKENS: their input is not in the body); a
   * report past it is charged at it, marked estimated (H1). Absent: requestBytes +
   * PROMPT_SLACK_TOKENS.
   */
  maxInputTokens?: number;
  /**
   * The most server-side web searches the call may be charged (server-tools.ts webSearchCap:
   * none without a search tool, the request's `max_uses`/`max_tool_calls`, else per output token
   * allowed); a reported count past it is charged at it, marked estimated (H1). Absent: none.
   */
  maxWebSearches?: number;
  /**
   * Web searches the provider charges on every call it served, whatever its reply says
   * (server-tools.ts: OpenAI's Chat Completions search models search once per request): a
   * served call (2xx) or one charged an estimate is charged at least these. Absent: none.
   */
  searchesPerCall?: number;
  /**
   * The request's fee-bearing OpenAI Responses built-in tools (tool-fees.ts toolFeeBound, set by
   * worst-case.ts callWorstCase): the reply's file searches, new containers and images are
   * charged by it. Absent: such items, if any, at the dearest fees, up to the output bound's cap.
   */
  toolFees?: ToolFeeBound;
  /**
   * True when the request's web searches and its other built-in tool calls share one bound
   * (OpenAI Responses' `max_tool_calls`, worst-case.ts callWorstCase): the searches charged count
   * against the other calls' bound (tool-fees.ts toolFeeCharge `usedCalls`).
   */
  toolCallsShared?: boolean;
  /** Epoch ms when the gateway received the request. */
  startedAt: number;
  /**
   * Called with `job` once the call is recorded, when the call was admitted (it had a
   * reservation): set by the routes for a job a budget top-up resumed that still holds the
   * room of its refused call (`job.pausedNeedMicros`; gateway.ts GatewayOptions.onResumedCallRecorded).
   */
  onRecorded?: (job: JobRow) => void;
  /** The wire format the client spoke (`anthropic-messages`, `openai-chat`, `openai-responses`). Default anthropic-messages. */
  api?: string;
  /** The budget reservation to settle with the call's cost once it is known. */
  reservation?: Reservation;
  /** A call the provider does not bill (unbilled-call.ts): its reply's usage is none, and that is no sign of a fault. */
  unbilled?: boolean;
  /**
   * Usage of a non-streamed reply body (default: Anthropic Messages, usage.ts usageFromMessage):
   * null when it is not known whole; with `partial`, the figures it does report (the rest 0),
   * or null when it reports none, for the estimate of a call whose usage is not known.
   */
  usageFromBody?: (body: unknown, partial?: boolean) => CallUsage | null;
  /**
   * Set when an upstream attempt of this call may have been billed though it got no reply (its
   * connection closed after the whole request was sent: upstream-http.ts UpstreamDroppedError)
   * and the call went on to another attempt: the call is then charged at least an estimate,
   * whatever the last attempt got (a refused connection, a 503): never $0 for a call the
   * provider may bill (fresh-tester finding: a drop then a refused retry was charged $0).
   */
  unansweredAttempt?: boolean;
  /** A fresh stream usage reader (default: Anthropic Messages SSE, usage.ts). */
  streamReader?: () => StreamReader;
}

/**
 * One-shot recorder: the first call writes the row, later calls do nothing. `replyBytes`: the
 * reply's text bytes (a whole body's, or a stream's text), for an estimate the row may need.
 */
function recorder(ctx: CallContext) {
  let done = false;
  // `unserved`: a 2xx that served nothing (a stream that was only an error event): no tokens is its usage, not a broken report
  return async (r: { httpStatus: number; model: string | null; usage: CallUsage; usageKnown: boolean; refused?: string; replyBytes?: number; unserved?: boolean }): Promise<void> => {
    if (done) return;
    done = true;
    // Priced and recorded by the requested model, never the reply's (H2); the ledger has one
    // model column. Text from outside: PostgreSQL cannot store NUL.
    const model = ctx.requestModel.includes('\0') ? ctx.requestModel.replaceAll('\0', '\uFFFD') : ctx.requestModel;
    let usage = r.usage;
    let usageKnown = r.usageKnown;
    // an earlier attempt the provider may have worked on and billed, and no tokens for this outcome
    if (ctx.unansweredAttempt === true && ctx.unbilled !== true && r.refused === undefined && usage.inputTokens + usage.outputTokens + usage.cacheReadTokens + usage.cacheWriteTokens === 0) {
      usage = estimateUsage(usage, ctx.requestBytes, r.replyBytes ?? 0, ctx.maxOutputTokens ?? DEFAULT_MAX_OUTPUT_TOKENS);
      usageKnown = false;
    }
    // a search model searched for a call it served (or may have: an estimate), reported or not
    if (ctx.searchesPerCall && r.unserved !== true && (!usageKnown || (r.httpStatus >= 200 && r.httpStatus < 300))) usage = withCallSearches(usage, ctx.searchesPerCall);
    // H1: no correct provider reports past the bounds reserved for; such a figure is charged
    // at its bound, as an estimate. The scripted model's figures are the gateway's own.
    if (ctx.provider !== 'scripted') {
      const maxOut = ctx.maxOutputTokens ?? DEFAULT_MAX_OUTPUT_TOKENS;
      // A served call reported as using no token at all: no provider serves one so (an input
      // of 0 comes with cache reads, an answer is at least a token). Its usage is not known: the
      // estimate, never $0 (a broken OpenAI-compatible server would otherwise spend nothing).
      if (usageKnown && ctx.unbilled !== true && r.unserved !== true && r.httpStatus >= 200 && r.httpStatus < 300 && usage.inputTokens + usage.outputTokens + usage.cacheReadTokens + usage.cacheWriteTokens === 0) {
        ctx.log.warn('gateway: the upstream reported no tokens for a call it served: charged an estimate', { job: ctx.job.id, model });
        usage = estimateUsage(usage, ctx.requestBytes, r.replyBytes ?? 0, maxOut);
        usageKnown = false;
      }
      const bounded = boundedUsage(usage, ctx.maxInputTokens ?? ctx.requestBytes + PROMPT_SLACK_TOKENS, maxOut);
      if (bounded !== null) {
        if (usageKnown) {
          // a figure past any bound was read as MAX_REPORTED_TOKENS + 1 (usage.ts reportedCount): say "over N", not that
          const said = (n: number) => (n > MAX_REPORTED_TOKENS ? `over ${MAX_REPORTED_TOKENS}` : n);
          ctx.log.warn('gateway: the upstream reported more tokens than the request allows: charged the bound, as an estimate', {
            job: ctx.job.id,
            model,
            input: said(usage.inputTokens + usage.cacheReadTokens + usage.cacheWriteTokens),
            output: said(usage.outputTokens),
            chargedInput: bounded.inputTokens + bounded.cacheReadTokens + bounded.cacheWriteTokens,
            chargedOutput: bounded.outputTokens,
          });
        }
        usage = bounded;
        usageKnown = false;
      }
      const searches = usage.webSearchRequests === undefined ? null : boundedSearches(usage, ctx.maxWebSearches ?? webSearchCap(null, maxOut));
      if (searches !== null) {
        if (usageKnown) ctx.log.warn('gateway: the upstream reported more web searches than the request allows: charged the bound, as an estimate', { job: ctx.job.id, model, webSearches: usage.webSearchRequests });
        usage = searches;
        usageKnown = false;
      }
    }
    // per-call fees of other built-in tools (tool-fees.ts), held to the request's bound (H1);
    // an image's fee is a flat estimate, so the usage charged is one
    let toolFeeMicros = 0;
    if (usage.toolCalls !== undefined) {
      const fees = toolFeeCharge(usage.toolCalls, ctx.toolFees ?? null, ctx.maxOutputTokens ?? DEFAULT_MAX_OUTPUT_TOKENS, ctx.provider !== 'scripted', ctx.toolCallsShared ? (usage.webSearchRequests ?? 0) : 0);
      if (fees.capped && usageKnown) ctx.log.warn('gateway: the upstream reported more built-in tool calls than the request allows: charged the bound, as an estimate', { job: ctx.job.id, model, fileSearches: usage.toolCalls.fileSearch, containers: usage.toolCalls.containers.length, images: usage.toolCalls.images });
      if (fees.capped || fees.estimated) usageKnown = false;
      toolFeeMicros = fees.micros;
    }
    // long-context rates (long-context.ts) by the input side of the usage charged
    const cost = callCost(toolFeeMicros > 0 ? { ...usage, toolFeeMicros } : usage, ratesFor(priceFor(ctx.prices, model), usage.inputTokens + usage.cacheReadTokens + usage.cacheWriteTokens));
    const row: NewModelCall = {
      jobId: ctx.job.id,
      attempt: ctx.job.attempt,
      provider: ctx.provider,
      model,
      api: ctx.api ?? 'anthropic-messages',
      streamed: ctx.streamed,
      httpStatus: r.httpStatus,
      // named, not an object rest without cacheWrite1hTokens (a slow runtime copy on every call)
      inputTokens: usage.inputTokens,
      outputTokens: usage.outputTokens,
      cacheReadTokens: usage.cacheReadTokens,
      cacheWriteTokens: usage.cacheWriteTokens,
      usageKnown,
      webSearchRequests: usage.webSearchRequests ?? 0,
      costMicros: cost.micros,
      costNanos: cost.nanos,
      runnerId: ctx.job.runnerId,
      startedAt: ctx.startedAt,
      durationMs: Math.max(0, Date.now() - ctx.startedAt),
    };
    // set after, not spread into the literal (a spread there copies the whole row on every call)
    if (r.refused) row.refused = r.refused;
    // Charge the tree and write the ledger row in one store transaction (budgets.ts
    // settleBudget); without a reservation (refusals) the row alone.
    let written = false;
    if (ctx.reservation) {
      try {
        written = await ctx.reservation.settle(cost.micros, row);
      } catch (err) {
        ctx.log.error('gateway: could not settle the budget reservation', { job: ctx.job.id, error: (err as Error).message });
        // settle charged nothing: try to release and charge without the ledger row
        // (a bad row must not keep the reservation), then write the row on its own.
        try {
          await ctx.store.settleBudget?.(ctx.job.rootId, ctx.reservation.id, cost.micros, Date.now());
        } catch {
          /* the sweeper charges it after its expiry (H7) */
        }
      }
    }
    if (!written) {
      try {
        await ctx.store.recordModelCall(row);
      } catch (err) {
        ctx.log.error('gateway: could not record model call', { job: ctx.job.id, error: (err as Error).message });
      }
    }
    if (ctx.reservation && ctx.onRecorded) ctx.onRecorded(ctx.job);
    const fields: Record<string, unknown> = {
      job: ctx.job.id,
      provider: ctx.provider,
      model,
      status: r.httpStatus,
      streamed: ctx.streamed,
      input: row.inputTokens,
      output: row.outputTokens,
      cacheRead: row.cacheReadTokens,
      cacheWrite: row.cacheWriteTokens,
      webSearches: row.webSearchRequests,
      usageKnown,
      costMicros: row.costMicros,
      ms: row.durationMs,
    };
    if (toolFeeMicros > 0) fields.toolFeeMicros = toolFeeMicros;
    // the model the reply named, when another (upstream text: cut to a model name's length)
    if (r.model !== null && r.model !== ctx.requestModel) fields.replyModel = r.model.slice(0, MAX_MODEL_NAME);
    ctx.log.info('gateway: model call', fields);
  };
}

const NO_USAGE: CallUsage = { inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0, cacheWrite1hTokens: 0 };

/**
 * Records a call the gateway refused without asking the upstream (`reason`: `budget`,
 * `invalid_request`, `unknown_model`, `too_large`, ...): no tokens, $0, `refused` set.
 */
export async function recordRefused(ctx: CallContext, httpStatus: number, reason: string): Promise<void> {
  await recorder(ctx)({ httpStatus, model: null, usage: NO_USAGE, usageKnown: true, refused: reason });
}

/**
 * Records the call whose request never got a reply: httpStatus 0. When the upstream could not
 * be reached, no tokens and usage known (nothing was served, so nothing is owed). When the
 * request had gone whole before the call ended (`clientGone`: the gateway cut it — its job's
 * attempt ended, the server stops; a non-streamed call is not cut when only its client goes
 * away, upstream-signal.ts — or the upstream dropped the connection), the provider may bill
 * what it read and began to write: an estimate marked as one, input from the request's size,
 * output 1 ({@link estimateUsage}; issue 3: never $0 for a call that may cost).
 */
export async function recordUnreachable(ctx: CallContext, clientGone = false): Promise<void> {
  if (!clientGone) return recorder(ctx)({ httpStatus: 0, model: null, usage: NO_USAGE, usageKnown: true });
  await recorder(ctx)({ httpStatus: 0, model: null, usage: estimateUsage(null, ctx.requestBytes, 0, ctx.maxOutputTokens ?? DEFAULT_MAX_OUTPUT_TOKENS), usageKnown: false });
}

/**
 * Records a call the provider served (and may bill) whose reply did not reach the client as
 * sent, e.g. a 2xx over the size limit (upstream-too-large.ts): `httpStatus` is what the client
 * was answered, `usage` an estimate, recorded as one (usageKnown false; never $0).
 */
export async function recordEstimated(ctx: CallContext, httpStatus: number, usage: CallUsage): Promise<void> {
  await recorder(ctx)({ httpStatus, model: null, usage, usageKnown: false });
}

/**
 * Meters a provider's reply so that exactly one model-call row is recorded for it:
 * - non-2xx: recorded with no tokens (errors are not billed);
 * - a 2xx without a body (`body` null and no `stream`: a 204 No Content, upstream-http.ts):
 *   charged an estimate marked as one ({@link estimateUsage}: input by the request's size,
 *   output 1 token), never $0; the reply passes on as it came (no body invented);
 * - SSE (`text/event-stream`): chunks pass through as they arrive while usage is read from
 *   them (a stream whose only event is an error, before the message began, is an error: no
 *   tokens); the row is written when the stream ends (before the client sees the end), fails, or
 *   the client goes away (`signal` aborted, or the consumer stops early). Usage is known only
 *   when the stream completed with its whole usage (Anthropic: message_start's usage and a
 *   message_delta's output figure, then message_stop; OpenAI: the usage chunk or
 *   response.completed's usage) and every figure it reported is a possible count (an integer
 *   from 0 to MAX_REPORTED_TOKENS, usage.ts); otherwise it is an estimate
 *   ({@link estimateUsage}) marked usageKnown=false;
 * - JSON: `usage` taken from the whole body; a body that is not JSON (an empty one included),
 *   or has no usage, or an impossible one, is still recorded, charged an estimate marked as one
 *   (never $0), and passed on as sent. The reply is returned once the row is written, or at
 *   once when the store commits it before reading any later request (`writesInTurnOrder`).
 * Every call is priced by the requested model (`ctx.requestModel`), at its long-context rates
 * when its input side is past the model's threshold (long-context.ts), server-side web searches
 * included (`price.webSearch` per request, H4; at least `ctx.searchesPerCall` for a served
 * call), and so are OpenAI Responses built-in tool fees (tool-fees.ts: file searches,
 * containers, images — an image's fee an estimate, recorded as one), and usage past what the
 * request allows
 * (`ctx.maxInputTokens`, `ctx.maxOutputTokens`, `ctx.maxWebSearches`) is charged at those
 * bounds, marked estimated (usage.ts boundedUsage, server-tools.ts boundedSearches).
 * @returns the reply to send to the client (same status and headers).
 */
export async function meteredReply(res: Reply, ctx: CallContext, signal?: CallSignal): Promise<Reply> {
  const record = recorder(ctx);
  if (res.status < 200 || res.status >= 300) {
    await record({ httpStatus: res.status, model: null, usage: NO_USAGE, usageKnown: true });
    return res;
  }
  if (!res.body && !res.stream) {
    // A 2xx without a body (204 No Content: upstream-http.ts reads none): the provider says it
    // served the call, so it may bill it, and nothing says what it used: the estimate, never $0.
    ctx.log.warn('gateway: upstream 2xx reply had no body: charged an estimate', { job: ctx.job.id, status: res.status });
    await record({ httpStatus: res.status, model: null, usage: estimateUsage(null, ctx.requestBytes, 0, ctx.maxOutputTokens ?? DEFAULT_MAX_OUTPUT_TOKENS), usageKnown: false });
    return res;
  }
  if (!isEventStream(res)) {
    const buf = res.body ?? Buffer.alloc(0);
    let parsed: unknown = null;
    try {
      parsed = JSON.parse(buf.toString('utf8'));
    } catch {
      /* not JSON: usage unknown */
    }
    const read = ctx.usageFromBody ?? usageFromMessage;
    const usage = read(parsed);
    const model = parsed && typeof (parsed as { model?: unknown }).model === 'string' ? (parsed as { model: string }).model : null;
    const recorded = record({
      httpStatus: res.status,
      model,
      usage: usage ?? estimateUsage(read(parsed, true), ctx.requestBytes, buf.byteLength, ctx.maxOutputTokens ?? DEFAULT_MAX_OUTPUT_TOKENS),
      usageKnown: usage !== null,
      replyBytes: buf.byteLength,
    });
    // On a store that commits the settle issued now before it reads any later request (SQLite:
    // types.ts writesInTurnOrder), the reply goes out without waiting for that commit: the
    // client's next call, or a read of the ledger or budget, still finds the call settled.
    // Elsewhere (PostgreSQL) the reply waits, or the next call's reservation could find this
    // one's worst case still held and be refused for budget.
    if (ctx.store.writesInTurnOrder === true) {
      recorded.catch((err: unknown) => ctx.log.error('gateway: could not record model call', { job: ctx.job.id, error: (err as Error).message }));
    } else await recorded;
    return res;
  }
  const reader: StreamReader = ctx.streamReader ? ctx.streamReader() : new StreamUsageReader();
  const finish = async (how: 'ended' | 'broken' | 'cancelled') => {
    const st = how === 'ended' ? reader.end() : reader.state();
    // A stream whose last event came (message_stop, [DONE], response.completed, with its usage)
    // is known however its connection ended after it: a client that hangs up on the last event
    // while the upstream holds the connection open was charged an estimate (fresh-user finding).
    // A stream the upstream ended cleanly after its final figures but without its last event
    // (some servers leave out message_stop or [DONE]) is known too: a cut or broken stream is
    // not `ended`. A figure that cannot be real (usage.ts reportedCount) makes the whole usage unknown.
    const known = (st.complete || (how === 'ended' && st.usageFinal)) && !st.errored && !st.invalidUsage;
    if (st.errored && !st.sawStart && st.textBytes === 0) {
      // an error event before the message began (Anthropic documents `overloaded_error` sent so
      // after a 200; a Responses `error` before response.created): nothing was served, and
      // errors are not billed (fresh-tester finding: charged an estimate)
      await record({ httpStatus: res.status, model: st.model, usage: NO_USAGE, usageKnown: true, unserved: true });
      return;
    }
    await record({
      httpStatus: res.status,
      model: st.model,
      usage: known ? st.usage : estimateUsage(st.sawStart ? st.usage : null, ctx.requestBytes, st.textBytes, ctx.maxOutputTokens ?? DEFAULT_MAX_OUTPUT_TOKENS),
      usageKnown: known,
      replyBytes: st.textBytes,
    });
  };
  if (!res.stream) {
    // A whole SSE body (scripted model): read at once.
    reader.push(res.body!);
    await finish('ended');
    return res;
  }
  // Usage is read from each raw chunk as it passes (a synchronous step, chunk-stream.ts); the
  // row is written in the stream's one finish hook, before the reader sees its end.
  const stream = ChunkStream.from(res.stream)
    .through({
      push: (chunk) => {
        reader.push(chunk);
        return chunk;
      },
    })
    .onFinish(async (how, err) => {
      const aborted = signal?.aborted === true;
      if (how === 'broken' && !aborted) ctx.log.warn('gateway: upstream stream broke', { job: ctx.job.id, error: err?.message ?? 'unknown' });
      await finish(how === 'broken' && aborted ? 'cancelled' : how);
    });
  return { ...res, stream };
}
