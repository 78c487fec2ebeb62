import { SseParser } from './sse.js';
import { mergeToolCalls, noToolCalls, ToolCallTally, toolCallsIn, type ToolCalls } from './tool-fees.js';
import { INVALID_COUNT, reportedCount, type CallUsage, type StreamUsageState } from './usage.js';

/**
 * Usage extraction for the OpenAI wire formats. OpenAI counts cached prompt tokens INSIDE the
 * prompt/input figure (`prompt_tokens_details.cached_tokens` / `input_tokens_details.cached_tokens`),
 * so they are split out: inputTokens = prompt − cached, cacheReadTokens = cached (each category
 * priced once). GPT-5.6 and later also report the prompt tokens written to the cache
 * (`input_tokens_details.cache_write_tokens`, also inside the input figure; billed at 1.25× input,
 * data/prices.json cacheWrite5m): cacheWriteTokens = written, taken out of inputTokens too; a
 * reply without the field has none. Reasoning tokens are inside the output figure.
 */

/**
 * An OpenAI `usage` object (Chat Completions or Responses shape) → CallUsage; null (unknown: the
 * call is charged an estimate) without input and output figures, or when a figure it gives is
 * not a possible count (usage.ts reportedCount: negative, fractional, not a number, over
 * MAX_REPORTED_TOKENS).
 * `partial`: for the estimate of a call whose usage is not known (usage.ts estimateUsage), the
 * possible figures it does give (a missing or impossible one taken as 0), or null when it gives
 * neither an input nor an output figure (an OpenAI-compatible server reporting `prompt_tokens`
 * alone: its input was charged as ⌈request bytes / 4⌉, a fresh tester's finding).
 */
export function usageFromOpenAi(u: unknown, partial = false): CallUsage | null {
  if (u === null || typeof u !== 'object') return null;
  const w = u as Record<string, unknown>;
  const count = partial ? possibleCount : reportedCount;
  let input = count(w.prompt_tokens) ?? count(w.input_tokens);
  let output = count(w.completion_tokens) ?? count(w.output_tokens);
  if (partial) {
    if (input === null && output === null) return null;
    input ??= 0;
    output ??= 0;
  }
  if (input === null || output === null || input === INVALID_COUNT || output === INVALID_COUNT) return null;
  const details = (w.prompt_tokens_details ?? w.input_tokens_details) as Record<string, unknown> | null | undefined;
  const c = count(details?.cached_tokens);
  const wr = count(details?.cache_write_tokens);
  if (c === INVALID_COUNT || wr === INVALID_COUNT) return null;
  // each part at most what is left of the input figure they are counted in
  const cached = Math.min(input, c ?? 0);
  const written = Math.min(input - cached, wr ?? 0);
  return { inputTokens: input - cached - written, outputTokens: output, cacheReadTokens: cached, cacheWriteTokens: written, cacheWrite1hTokens: 0 };
}

/** usage.ts reportedCount, with a figure that is not a possible count taken as absent. */
function possibleCount(v: unknown): number | null {
  const n = reportedCount(v);
  return n === INVALID_COUNT ? null : n;
}

/** True when `u` is a usage object that gives some figure {@link usageFromOpenAi} cannot take as real. */
function invalidOpenAiUsage(u: unknown): boolean {
  if (u === null || typeof u !== 'object') return false;
  const w = u as Record<string, unknown>;
  const details = (w.prompt_tokens_details ?? w.input_tokens_details) as Record<string, unknown> | null | undefined;
  for (const v of [w.prompt_tokens, w.input_tokens, w.completion_tokens, w.output_tokens, details?.cached_tokens, details?.cache_write_tokens]) if (reportedCount(v) === INVALID_COUNT) return true;
  return false;
}

/**
 * Web searches a Responses reply ran (H4): its `web_search_call` output items, each priced per
 * call whatever its action (search, open_page, find_in_page) or status — the gateway cannot
 * tell which ones OpenAI bills, so it charges every one (the dearer reading). 0 when `output`
 * is not an array (Chat Completions replies have none: a search model's one search per call
 * is charged from its request, server-tools.ts webSearchBound).
 */
export function webSearchCalls(output: unknown): number {
  if (!Array.isArray(output)) return 0;
  let n = 0;
  for (const it of output) if (it !== null && typeof it === 'object' && (it as { type?: unknown }).type === 'web_search_call') n++;
  return n;
}

/** `u` with `searches` web searches and the other fee-bearing tool calls `calls` (unchanged when there are none). */
function withServerTools(u: CallUsage | null, searches: number, calls: ToolCalls | null): CallUsage | null {
  if (u === null) return u;
  const tools = calls !== null && !noToolCalls(calls);
  if (searches === 0 && !tools) return u;
  const out: CallUsage = { ...u };
  if (searches > 0) out.webSearchRequests = searches;
  if (tools) out.toolCalls = calls!;
  return out;
}

/**
 * Usage of a non-streamed Chat Completions or Responses body, or null: with its
 * web_search_call items ({@link webSearchCalls}) and its other fee-bearing built-in tool calls
 * (file_search_call, code_interpreter_call containers, image_generation_call: tool-fees.ts).
 * `partial`: as {@link usageFromOpenAi}'s, for an estimate.
 */
export function usageFromOpenAiBody(body: unknown, partial = false): CallUsage | null {
  if (body === null || typeof body !== 'object') return null;
  const output = (body as { output?: unknown }).output;
  return withServerTools(usageFromOpenAi((body as { usage?: unknown }).usage, partial), webSearchCalls(output), Array.isArray(output) ? toolCallsIn(output) : null);
}

/** A reader with the interface meter.ts drives (push bytes as they pass, then end()). */
export interface StreamReader {
  push(chunk: Uint8Array | string): void;
  end(): StreamUsageState;
  state(): StreamUsageState;
}

/** The parts of a Chat Completions chunk's `choices[].delta` whose text an estimate counts (OpenAI's `content`, `refusal`, `tool_calls`; OpenAI-compatible servers' `reasoning_content` / `reasoning`). */
interface ChatDelta {
  content?: unknown;
  refusal?: unknown;
  reasoning_content?: unknown;
  reasoning?: unknown;
  tool_calls?: Array<{ function?: { arguments?: unknown } } | null>;
}

/**
 * Reads usage from an OpenAI SSE stream incrementally. Chat Completions: `data: {chunk}` lines,
 * the usage in the chunk that carries `usage` (sent last when `stream_options.include_usage`),
 * complete at `data: [DONE]`. Responses: `response.created` starts, `response.completed` (or
 * `response.incomplete`, or `response.failed` that reports usage) carries `response.usage` and
 * completes; an `error`, or a `response.failed` without usage, marks it errored. Text, refusal, reasoning and argument deltas are counted (bytes) for estimates. Web searches (H4):
 * the `web_search_call` items of response.completed's output, or (more) those seen in
 * `response.output_item.added`/`done` events; the other fee-bearing tool calls (tool-fees.ts)
 * the same way (the larger count, the union of containers).
 */
export class OpenAiStreamReader implements StreamReader {
  private readonly parser = new SseParser();
  private usage: CallUsage | null = null;
  /** The figures of a usage object that did not give the whole usage (usageFromOpenAi `partial`), for the estimate. */
  private partialUsage: CallUsage | null = null;
  private sawStart = false;
  private complete = false;
  private errored = false;
  private invalidUsage = false;
  private textBytes = 0;
  /** `textBytes` when the last usage was taken: text past it came after the usage, which then does not count it. */
  private textAtUsage: number | null = null;
  private model: string | null = null;
  /** Ids of the web_search_call items seen (response.output_item.added/done), for the count (H4). */
  private readonly searches = new Set<string>();
  /** The count from response.completed's output list, when it had one (it wins: it is the whole reply). */
  private finalSearches: number | null = null;
  /** The fee-bearing tool call items seen in output_item events (tool-fees.ts). */
  private readonly tools = new ToolCallTally();
  /** Those of response.completed's output list, when it had one. */
  private finalTools: ToolCalls | null = null;

  push(chunk: Uint8Array | string): void {
    for (const ev of this.parser.push(chunk)) this.onEvent(ev.event, ev.data);
  }

  end(): StreamUsageState {
    for (const ev of this.parser.end()) this.onEvent(ev.event, ev.data);
    return this.state();
  }

  state(): StreamUsageState {
    const usage = this.usage ?? this.partialUsage ?? { inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0, cacheWrite1hTokens: 0 };
    return {
      sawStart: this.sawStart,
      complete: this.complete && this.usage !== null,
      usageFinal: this.sawStart && this.usage !== null,
      errored: this.errored,
      // text after the final usage (an upstream that reports and then writes on) is not in it: unknown, estimated
      // (and a line over the parser's limit: its event, text or usage, is missing)
      invalidUsage: this.invalidUsage || (this.textAtUsage !== null && this.textBytes > this.textAtUsage) || this.parser.skipped > 0,
      usage: withServerTools(usage, this.finalSearches ?? this.searches.size, this.finalTools === null ? this.tools.calls() : mergeToolCalls(this.tools.calls(), this.finalTools))!,
      textBytes: this.textBytes + this.parser.skipped,
      model: this.model,
    };
  }

  /** Keeps a usage object's figures, or notes that it gave impossible ones (the call's usage is then unknown). */
  private takeUsage(u: unknown): void {
    const usage = usageFromOpenAi(u);
    if (usage) {
      this.usage = usage;
      this.textAtUsage = this.textBytes;
      return;
    }
    if (invalidOpenAiUsage(u)) this.invalidUsage = true;
    this.partialUsage = usageFromOpenAi(u, true) ?? this.partialUsage;
  }

  private onEvent(event: string, data: string): void {
    if (data === '[DONE]') {
      if (this.sawStart) this.complete = true;
      return;
    }
    let msg: Record<string, unknown>;
    try {
      msg = JSON.parse(data) as Record<string, unknown>;
    } catch {
      return;
    }
    const type = typeof msg.type === 'string' ? msg.type : event;
    if (type === 'response.failed') {
      // A failed response that says what it used is charged that (fresh-user finding: its usage
      // was dropped for an estimate from the request's size); one without usage is an error.
      const r = msg.response as { usage?: unknown; model?: unknown } | undefined;
      if (typeof r?.model === 'string') this.model = r.model;
      const usage = usageFromOpenAi(r?.usage);
      if (usage) {
        this.usage = usage;
        this.sawStart = true;
        this.complete = true;
      } else this.errored = true;
      return;
    }
    if (type === 'error') {
      this.errored = true;
      return;
    }
    // A Chat Completions chunk: OpenAI's names its `object`; some OpenAI-compatible servers' chunks
    // have `choices` (or the usage chunk's `usage`) but no `object` (a tester's fake: its usage
    // was dropped for an estimate). A Responses event always has a `type`.
    if (msg.object === 'chat.completion.chunk' || (msg.object === undefined && typeof msg.type !== 'string' && (Array.isArray(msg.choices) || msg.usage !== undefined))) {
      this.sawStart = true;
      if (typeof msg.model === 'string') this.model = msg.model;
      for (const ch of (Array.isArray(msg.choices) ? msg.choices : []) as Array<{ delta?: ChatDelta }>) {
        const d = ch.delta;
        if (!d) continue;
        // the output an estimate counts: text, a refusal, and reasoning as OpenAI-compatible
        // servers stream it (DeepSeek, vLLM: reasoning_content; Ollama, llama.cpp, OpenRouter:
        // reasoning) — billed as output, and left out it was estimated as 1 token (fresh-tester finding)
        for (const text of [d.content, d.refusal, d.reasoning_content, d.reasoning]) if (typeof text === 'string') this.textBytes += Buffer.byteLength(text, 'utf8');
        if (Array.isArray(d.tool_calls)) for (const tc of d.tool_calls) if (typeof tc?.function?.arguments === 'string') this.textBytes += Buffer.byteLength(tc.function.arguments, 'utf8');
      }
      // after its deltas: a chunk's usage (servers that send it in every chunk) covers its own text
      this.takeUsage(msg.usage);
      return;
    }
    if (type === 'response.created' || type === 'response.in_progress') {
      this.sawStart = true;
      const r = msg.response as { model?: unknown } | undefined;
      if (typeof r?.model === 'string') this.model = r.model;
    } else if (type === 'response.output_text.delta' || type === 'response.function_call_arguments.delta' || type === 'response.reasoning_summary_text.delta' || type === 'response.reasoning_text.delta' || type === 'response.refusal.delta') {
      if (typeof msg.delta === 'string') this.textBytes += Buffer.byteLength(msg.delta, 'utf8');
    } else if (type === 'response.output_item.added' || type === 'response.output_item.done') {
      const item = msg.item as { type?: unknown; id?: unknown } | undefined;
      if (item?.type === 'web_search_call') this.searches.add(typeof item.id === 'string' ? item.id : `#${String(msg.output_index)}`);
      else this.tools.add(item, msg.output_index);
    } else if (type === 'response.completed' || type === 'response.incomplete') {
      const r = msg.response as { usage?: unknown; model?: unknown; output?: unknown } | undefined;
      if (typeof r?.model === 'string') this.model = r.model;
      if (Array.isArray(r?.output)) {
        this.finalSearches = Math.max(webSearchCalls(r.output), this.searches.size);
        this.finalTools = toolCallsIn(r.output);
      }
      this.takeUsage(r?.usage);
      this.sawStart = true;
      this.complete = true;
    }
  }
}
