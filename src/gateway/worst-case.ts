import type { NeedCall, PendingCall } from '../store/types.js';
import { IMAGE_TOKENS_BOUND, type InlineImages } from './input-images.js';
import { ratesFor } from './long-context.js';
import type { CallContext } from './meter.js';
import type { TablePrice } from './price-schema.js';
import type { ServerInputAllowance } from './server-input.js';
import { webSearchCap, webSearchWorstMicros, type WebSearchBound } from './server-tools.js';
import { toolFeeWorstMicros, type ToolFeeBound } from './tool-fees.js';

/**
 * max_tokens assumed when a request does not say (OpenAI formats make it optional), or the
 * model's maximum output when that is lower (max-output.ts).
 */
export const DEFAULT_MAX_OUTPUT_TOKENS = 32_000;

/**
 * Worst-case cost of a call's tokens before it is made, in integer micro-dollars (rounded up), the
 * amount reserved against the tree budget (issue 3: "input estimate + max_tokens at the
 * output price"):
 * - input estimate: ⌈(requestBytes − the inline images' base64 bytes) / 3⌉ tokens — a token is
 *   on average ~4 bytes of English or code, and fewer bytes only for unusual text, so bytes/3
 *   is a safe bound for JSON request bodies — plus {@link IMAGE_TOKENS_BOUND} per inline image
 *   (`images`, input-images.ts: a provider prices an image by its pixels, not its bytes),
 *   priced at the highest input-side rate (input, 5-minute or 1-hour cache write), since the
 *   client may have marked any of it for caching;
 *   plus `serverInputTokens`, the input tokens server tools may add (server-input.ts
 *   serverInputAllowance: web search, web fetch, code execution results), at the same rate;
 * - output: `maxTokens` (or {@link DEFAULT_MAX_OUTPUT_TOKENS}) at the output price.
 * Both at the model's long-context rates when that input estimate is past its threshold
 * (long-context.ts: Claude Sonnet 4 / 4.5 above 200,000 input tokens).
 * A price of P USD/MTok is P µ$ per token. The result is at most Number.MAX_SAFE_INTEGER.
 */
export function worstCaseMicros(requestBytes: number, maxTokens: number | undefined, table: TablePrice, images?: InlineImages, serverInputTokens = 0): number {
  const inTokens = worstInputTokens(requestBytes, images) + Math.max(0, serverInputTokens);
  const outTokens = Math.max(0, Math.ceil(maxTokens ?? DEFAULT_MAX_OUTPUT_TOKENS));
  return worstTokensMicros(inTokens, outTokens, table);
}

/**
 * {@link worstCaseMicros} of `inTokens` input-side tokens (at the highest input-side rate) and
 * `outTokens` output tokens at `table`'s rates (its long-context rates past their threshold),
 * µ$ rounded up, at most Number.MAX_SAFE_INTEGER.
 */
export function worstTokensMicros(inTokens: number, outTokens: number, table: TablePrice): number {
  const price = ratesFor(table, inTokens);
  const inRate = Math.max(price.input, price.cacheWrite5m, price.cacheWrite1h);
  // exact in units of 10⁻⁶ µ$, then rounded up to whole µ$
  const inScaled = Math.round(inRate * 1_000_000);
  const outScaled = Math.round(price.output * 1_000_000);
  const small = inTokens * inScaled + outTokens * outScaled + 999_999;
  if (small <= Number.MAX_SAFE_INTEGER) {
    // Every call's case, in plain numbers (BigInt cost ~1 µs a call): each product and the sum
    // are integers below 2^53, so exact; the quotient is corrected to the exact floor.
    let q = Math.floor(small / 1_000_000);
    if (q * 1_000_000 > small) q -= 1;
    else if ((q + 1) * 1_000_000 <= small) q += 1;
    return q;
  }
  const scaled = (p: number) => BigInt(Math.round(p * 1_000_000));
  const total = BigInt(inTokens) * scaled(inRate) + BigInt(outTokens) * scaled(price.output);
  // Past 2^53 µ$ ($9 billion) no budget can hold it: the largest safe integer refuses it just as well.
  const micros = (total + 999_999n) / 1_000_000n;
  return micros > BigInt(Number.MAX_SAFE_INTEGER) ? Number.MAX_SAFE_INTEGER : Number(micros);
}

/**
 * Input tokens the worst case counts for a request of `requestBytes` bytes (issue 3): ⌈(bytes −
 * the inline images' base64 bytes) / 3⌉ + {@link IMAGE_TOKENS_BOUND} per inline image.
 */
export function worstInputTokens(requestBytes: number, images?: InlineImages): number {
  return images === undefined || images.images === 0 ? Math.ceil(Math.max(0, requestBytes) / 3) : Math.ceil(Math.max(0, requestBytes - images.bytes) / 3) + images.images * IMAGE_TOKENS_BOUND;
}

/**
 * How much larger, in bytes, the request a harness sends on resuming its session may be than
 * the one that was refused: Claude Code 2.1 adds "Continue from where you left off.", a filler
 * assistant message and the prompt again (~1 KB for test-fixer, observed); Codex the prompt
 * again. Room for an 8 KiB prompt. A job paused for budget needs this much more input room to
 * resume (fresh-user finding: a top-up of exactly the refused call's worst case resumed the
 * job, whose first call was then ~$0.001 short and paused it again).
 */
export const RESUME_GROWTH_BYTES = 8192;

/**
 * What a call reserves: `micros` (µ$) and the call as the reservation keeps it (H7);
 * `resumeMicros`, µ$: the worst case of the same call with {@link RESUME_GROWTH_BYTES} more
 * input, the need a budget pause stores (what a resume must have room for).
 */
export interface CallWorstCase {
  micros: number;
  call: PendingCall;
  resumeMicros: number;
  /** What `resumeMicros` was worked out from, kept with a budget pause so the need follows price changes ({@link needMicrosAt}). */
  resumeCall: NeedCall;
}

/** The call a budget pause keeps, to price its need again (store/ledger-types.ts NeedCall). */
export type { NeedCall };

/** The need (µ$) of `call` at `table`'s rates: as {@link callWorstCase}'s `resumeMicros` works it out. */
export function needMicrosAt(call: NeedCall, table: TablePrice): number {
  const searches = call.webSearches ? webSearchWorstMicros(table, { uses: call.webSearches, declared: true }) : 0;
  return Math.min(Number.MAX_SAFE_INTEGER, worstTokensMicros(call.inputTokens, call.outputTokens, table) + searches + (call.toolFeeMicros ?? 0));
}

/**
 * The worst case of the call of `ctx` (model `ctx.requestModel` at `price`), the amount its
 * reservation holds: {@link worstCaseMicros} for its tokens (`bodyBytes`, `maxOutputTokens` —
 * already × choices —, `images`) plus, when the request enables server-side web search, the
 * searches it allows (`searches`, server-tools.ts webSearchBound: `max_uses`/`max_tool_calls`,
 * else DEFAULT_WEB_SEARCH_USES) at the model's per-search price (H4: $10 per 1,000 = 10,000 µ$
 * each), and the input tokens its server tools may add (`serverInput`, server-input.ts
 * serverInputAllowance: `max_uses` × `max_content_tokens` where the request gives them, else
 * SERVER_INPUT_TOKENS_PER_USE per use) at the highest input-side rate, and the per-call fees of
 * the other built-in tools it enables (`toolFees`, OpenAI Responses file_search,
 * code_interpreter containers, image_generation: tool-fees.ts toolFeeWorstMicros), and the input
 * tokens the provider adds for the tools the request declares (`promptTokens`,
 * prompt-allowance.ts: Anthropic's tool-use system prompt and its defined tools) at the highest
 * input-side rate. Also sets
 * `ctx.maxWebSearches`, the most searches the call may then be charged, `ctx.toolFees` (what
 * the meter charges those fees by), and for a model that searches on every call
 * (`searches.perCall`) `ctx.searchesPerCall`.
 * The call's PendingCall carries these worst-case tokens and searches: the ledger row the sweep
 * writes if the call is never settled. `resumeMicros`: see {@link CallWorstCase}.
 */
export function callWorstCase(ctx: CallContext, price: TablePrice, bodyBytes: number, maxOutputTokens: number, images: InlineImages | undefined, searches: WebSearchBound | null, serverInput: ServerInputAllowance | null = null, toolFees: ToolFeeBound | null = null, promptTokens = 0): CallWorstCase {
  const added = (serverInput?.tokens ?? 0) + Math.max(0, promptTokens);
  const tokens = worstCaseMicros(bodyBytes, maxOutputTokens, price, images, added);
  const searchFees = webSearchWorstMicros(price, searches);
  const otherFees = toolFeeWorstMicros(toolFees);
  // OpenAI Responses' max_tool_calls bounds its built-in tool calls together ("applies across all
  // built-in tool calls, not per individual tool", OpenAI's API reference): web searches and the
  // other fee-bearing tools share it, so the most they cost is that count at the dearest fee, not
  // each kind at the whole count (a fresh tester's file_search + web_search was reserved twice)
  const shared = searches !== null && searches.declared && !searches.perCall && toolFees !== null && toolFees.declared !== null && toolFees.declared === searches.uses;
  const fees = shared ? Math.max(searchFees, otherFees) : searchFees + otherFees;
  const micros = Math.min(Number.MAX_SAFE_INTEGER, tokens + fees);
  const resumeMicros = Math.min(Number.MAX_SAFE_INTEGER, worstCaseMicros(bodyBytes + RESUME_GROWTH_BYTES, maxOutputTokens, price, images, added) + fees);
  // the need kept with a pause prices its searches and these fees apart (needMicrosAt): shared, the fees are what the dearest fee adds over the searches'
  const toolFeeMicros = shared ? Math.max(0, otherFees - searchFees) : otherFees;
  if (shared) ctx.toolCallsShared = true;
  const resumeCall: NeedCall = {
    model: ctx.requestModel,
    inputTokens: worstInputTokens(bodyBytes + RESUME_GROWTH_BYTES, images) + added,
    outputTokens: Math.max(0, Math.ceil(maxOutputTokens)),
    ...(searches !== null && searches.uses > 0 ? { webSearches: searches.uses } : {}),
    ...(toolFeeMicros > 0 ? { toolFeeMicros } : {}),
  };
  ctx.maxWebSearches = webSearchCap(searches, maxOutputTokens);
  if (toolFees) ctx.toolFees = toolFees;
  if (searches?.perCall) ctx.searchesPerCall = searches.uses;
  const call: PendingCall = {
    jobId: ctx.job.id,
    attempt: ctx.job.attempt,
    provider: ctx.provider,
    model: ctx.requestModel.replaceAll('\0', '\uFFFD'),
    api: ctx.api ?? 'anthropic-messages',
    streamed: ctx.streamed,
    runnerId: ctx.job.runnerId,
    inputTokens: worstInputTokens(bodyBytes, images) + added,
    outputTokens: Math.max(0, Math.ceil(maxOutputTokens)),
  };
  if (searches !== null && searches.uses > 0) call.webSearchRequests = searches.uses;
  return { micros, call, resumeMicros, resumeCall };
}

/**
 * What a job refused at `count_tokens` needs to resume, µ$: that endpoint is never billed (a
 * spent tree is refused there all the same), so the need stored with the pause is the worst case
 * of the Messages call being counted — the counted body (`bodyBytes`, `images`) grown by
 * {@link RESUME_GROWTH_BYTES} for the resumed harness's larger request, and `maxOutputTokens`
 * (max-output.ts outputBound: the request's `max_tokens`, else the limit a call without one
 * gets). 1 µ$ before: a top-up of $0.000001 "resumed" it only for its next call to pause it again.
 */
export function countedCallResumeMicros(bodyBytes: number, maxOutputTokens: number, price: TablePrice, images?: InlineImages): number {
  return worstCaseMicros(bodyBytes + RESUME_GROWTH_BYTES, maxOutputTokens, price, images);
}

/** The {@link NeedCall} of {@link countedCallResumeMicros}: the counted Messages call of `model`, grown. */
export function countedNeedCall(model: string, bodyBytes: number, maxOutputTokens: number, images?: InlineImages): NeedCall {
  return { model, inputTokens: worstInputTokens(bodyBytes + RESUME_GROWTH_BYTES, images), outputTokens: Math.max(0, Math.ceil(maxOutputTokens)) };
}
