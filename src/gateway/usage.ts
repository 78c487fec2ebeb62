import type { TokenUsage } from '../protocol/index.js';
import { IMAGE_TOKENS_BOUND } from './input-images.js';
import { SseParser } from './sse.js';
import type { ToolCalls } from './tool-fees.js';

/**
 * Token usage of one model call, in tokens. `inputTokens` excludes cache reads and writes
 * (Anthropic's `input_tokens`); `cacheReadTokens` = `cache_read_input_tokens`;
 * `cacheWriteTokens` = `cache_creation_input_tokens`, or the sum of
 * `cache_creation.ephemeral_5m_input_tokens` and `ephemeral_1h_input_tokens` when that is more
 * (or the total is absent), of which
 * `cacheWrite1hTokens` were written with the 1-hour lifetime (from
 * `cache_creation.ephemeral_1h_input_tokens`).
 * `webSearchRequests` (H4): server-side web searches the provider ran for the call, priced
 * per request (Anthropic `server_tool_use.web_search_requests`; OpenAI Responses
 * `web_search_call` output items); absent = 0. `toolCalls`: the other fee-bearing built-in tool
 * calls of an OpenAI Responses reply (file searches, containers, images: tool-fees.ts), charged
 * per call by the meter; absent = none.
 */
export type CallUsage = TokenUsage & { cacheWrite1hTokens: number; webSearchRequests?: number; toolCalls?: ToolCalls };

/** An Anthropic `usage` object as far as we read it; any field may be absent or null. */
interface WireUsage {
  input_tokens?: number | null;
  output_tokens?: number | null;
  cache_read_input_tokens?: number | null;
  cache_creation_input_tokens?: number | null;
  cache_creation?: { ephemeral_5m_input_tokens?: number | null; ephemeral_1h_input_tokens?: number | null } | null;
  /** Server tools run by the API (cumulative in a stream's message_delta); web fetch is not charged per request. */
  server_tool_use?: { web_search_requests?: number | null; web_fetch_requests?: number | null } | null;
}

/**
 * Web search calls named by a reply's content blocks (`server_tool_use` blocks named
 * `web_search`): the count charged when the usage does not say (a search that failed is not
 * billed, so a reported `server_tool_use.web_search_requests` wins).
 */
export function webSearchBlocks(content: unknown): number {
  if (!Array.isArray(content)) return 0;
  let n = 0;
  for (const b of content) if (isWebSearchBlock(b)) n++;
  return n;
}

function isWebSearchBlock(b: unknown): boolean {
  return b !== null && typeof b === 'object' && (b as { type?: unknown }).type === 'server_tool_use' && (b as { name?: unknown }).name === 'web_search';
}

/**
 * Most tokens one call can report in one category (input, output, cache read, cache write).
 * No model reads or writes anywhere near this in one call (the largest context windows are
 * ~1-2 million tokens); a larger figure is a broken or hostile upstream, and charging it as
 * given would bill a tree thousands of dollars for one call.
 */
export const MAX_REPORTED_TOKENS = 100_000_000;

/**
 * Input-side tokens (input + cache read + cache write) a correct provider may report beyond
 * the request body's bytes: text it adds to the prompt itself — the chat template's role and
 * turn markers, the tool-use system prompt the Anthropic API builds from `tools`, a reasoning
 * model's hidden instructions. These are a few hundred tokens on today's providers; 4,096
 * leaves room for any of them without letting a broken or hostile upstream bill much more.
 */
export const PROMPT_SLACK_TOKENS = 4_096;

/**
 * The most input-side tokens (input + cache read + cache write) a correct provider can report
 * for a request body of `bodyBytes` bytes holding `images` inline images: the bytes (providers
 * tokenize with byte-level BPE, so every token is at least one byte, even a data: URL's base64
 * that a text-only model reads as text) + {@link PROMPT_SLACK_TOKENS} + IMAGE_TOKENS_BOUND per
 * image (input-images.ts: an image is priced by its pixels, not its bytes). A reported figure
 * past this is charged at the bound, marked estimated (meter.ts). Not the bound of a request
 * whose server tools add input the body does not carry (server-input.ts reportedInputCap).
 */
export function inputTokensBound(bodyBytes: number, images: number): number {
  return bodyBytes + PROMPT_SLACK_TOKENS + images * IMAGE_TOKENS_BOUND;
}

/**
 * `u` held to what a correct provider can report (H1: reported usage is not trusted past its
 * bound): null when it is within both bounds (the common case: four additions, two
 * comparisons, no allocation), else a copy with output at most `maxOutput` (the output limit
 * reserved for, × choices) and the input-side figures (input + cache read + cache write) at
 * most `maxInput` ({@link inputTokensBound}), scaled down in proportion to what was reported
 * (each category keeps its share; `cacheWrite1hTokens` stays within `cacheWriteTokens`). The
 * caller charges the copy and records the call's usage as estimated. Either bound is at most
 * {@link MAX_REPORTED_TOKENS}.
 */
export function boundedUsage(u: CallUsage, maxInput: number, maxOutput: number): CallUsage | null {
  // no bound past MAX_REPORTED_TOKENS: a figure past that ({@link reportedCount}) is always held to one
  if (maxInput > MAX_REPORTED_TOKENS) maxInput = MAX_REPORTED_TOKENS;
  if (maxOutput > MAX_REPORTED_TOKENS) maxOutput = MAX_REPORTED_TOKENS;
  const input = u.inputTokens + u.cacheReadTokens + u.cacheWriteTokens;
  if (input <= maxInput && u.outputTokens <= maxOutput) return null;
  const out: CallUsage = { ...u, outputTokens: Math.min(u.outputTokens, Math.max(0, maxOutput)) };
  if (input > maxInput) {
    const bound = Math.max(0, maxInput);
    const read = Math.min(u.cacheReadTokens, Math.floor((u.cacheReadTokens / input) * bound));
    const write = Math.min(u.cacheWriteTokens, bound - read, Math.floor((u.cacheWriteTokens / input) * bound));
    out.cacheReadTokens = read;
    out.cacheWriteTokens = write;
    out.cacheWrite1hTokens = Math.min(write, Math.floor((u.cacheWrite1hTokens / input) * bound));
    out.inputTokens = bound - read - write;
  }
  return out;
}

/** Marks a reported figure that cannot be real (see {@link reportedCount}). */
export const INVALID_COUNT = -1;

/** What a reported figure past {@link MAX_REPORTED_TOKENS} counts as: past every bound ({@link boundedUsage}). */
export const PAST_ANY_BOUND = MAX_REPORTED_TOKENS + 1;

/**
 * A token figure as an upstream reported it: null when absent (`undefined`/`null`); the count
 * when it is an integer from 0 to {@link MAX_REPORTED_TOKENS}; {@link PAST_ANY_BOUND} for any
 * number past that (1e15, a JSON 1e400 read as Infinity): the upstream says the call used more
 * than any request allows, so it is charged at the request's bound, marked estimated (meter.ts,
 * {@link boundedUsage}), never less than a figure just under the limit would be (a fresh user
 * found 100,000,001 input tokens charged the small unknown-usage estimate, 99,999,999 the
 * bound); else {@link INVALID_COUNT} (negative, fractional, NaN, a string, ...): the call's
 * usage is then unknown and it is charged an estimate, marked as one (DESIGN: unknown usage is
 * never recorded as given).
 */
export function reportedCount(v: unknown): number | null {
  if (v === undefined || v === null) return null;
  if (typeof v !== 'number' || Number.isNaN(v) || v < 0) return INVALID_COUNT;
  if (v > MAX_REPORTED_TOKENS) return PAST_ANY_BOUND;
  return Number.isInteger(v) ? v : INVALID_COUNT;
}

/** Mutable accumulator: each figure is the latest non-null value seen (they are cumulative). */
class Figures {
  input: number | null = null;
  output: number | null = null;
  cacheRead: number | null = null;
  cacheWrite: number | null = null;
  cacheWrite1h: number | null = null;
  cacheWrite5m: number | null = null;
  webSearch: number | null = null;
  /** Some reported figure was not a possible count ({@link reportedCount}). */
  invalid = false;

  apply(u: unknown): void {
    if (u === null || typeof u !== 'object') return;
    const w = u as WireUsage;
    this.input = this.take(w.input_tokens) ?? this.input;
    this.output = this.take(w.output_tokens) ?? this.output;
    this.cacheRead = this.take(w.cache_read_input_tokens) ?? this.cacheRead;
    this.cacheWrite = this.take(w.cache_creation_input_tokens) ?? this.cacheWrite;
    this.cacheWrite1h = this.take(w.cache_creation?.ephemeral_1h_input_tokens) ?? this.cacheWrite1h;
    this.cacheWrite5m = this.take(w.cache_creation?.ephemeral_5m_input_tokens) ?? this.cacheWrite5m;
    if (w.server_tool_use !== undefined && w.server_tool_use !== null) this.webSearch = this.take(w.server_tool_use.web_search_requests) ?? this.webSearch;
  }

  /** The figure, or null (absent, or invalid: then {@link invalid} is set and the figure is ignored). */
  private take(v: unknown): number | null {
    const n = reportedCount(v);
    if (n !== INVALID_COUNT) return n;
    this.invalid = true;
    return null;
  }

  /** The figures; web searches as reported, else `searchBlocks` (the searches the reply's blocks named). */
  toUsage(searchBlocks = 0): CallUsage {
    const u: CallUsage = {
      inputTokens: this.input ?? 0,
      outputTokens: this.output ?? 0,
      cacheReadTokens: this.cacheRead ?? 0,
      // the total, or the lifetimes' sum when that is more (a compatible server sending only
      // the `cache_creation` breakdown, or a total short of it, had writes charged nothing or
      // less: a fresh tester); what disagrees is charged the larger, as estimates err high
      cacheWriteTokens: Math.max(this.cacheWrite ?? 0, (this.cacheWrite5m ?? 0) + (this.cacheWrite1h ?? 0)),
      cacheWrite1hTokens: this.cacheWrite1h ?? 0,
    };
    const searches = this.webSearch ?? searchBlocks;
    if (searches > 0) u.webSearchRequests = searches;
    return u;
  }
}

/**
 * Usage of a non-streamed Messages reply (`{..., "usage": {...}}`), or null (unknown: the call
 * is charged an estimate) when the body has no readable `usage` with at least input and output
 * figures, or any figure in it is not a possible count ({@link reportedCount}). Web searches:
 * `usage.server_tool_use.web_search_requests`, else the `server_tool_use` web_search blocks of
 * `content` ({@link webSearchBlocks}).
 * `partial`: for the estimate of a call whose usage is not known ({@link estimateUsage}), the
 * possible figures the body does report (the others 0), or null when it reports none: a reply
 * giving its input but no output figure is charged that input, not a guess from the request's
 * size (fresh-tester finding: 1,000 reported input tokens charged as 25).
 */
export function usageFromMessage(body: unknown, partial = false): CallUsage | null {
  if (body === null || typeof body !== 'object') return null;
  const u = (body as { usage?: unknown }).usage;
  if (u === null || typeof u !== 'object') return null;
  const f = new Figures();
  f.apply(u);
  if (partial ? f.input === null && f.output === null && f.cacheRead === null && f.cacheWrite === null : f.invalid || f.input === null || f.output === null) return null;
  return f.toUsage(f.webSearch === null ? webSearchBlocks((body as { content?: unknown }).content) : 0);
}

/**
 * What a streamed reply's events said so far. `complete` is true when the usage is final and
 * whole (Anthropic: `message_stop` arrived after a `message_start` that carried usage with an
 * input figure AND a `message_delta` that carried the final output figure — without either,
 * the usage is an estimate, never $0 or 1 output token for a streamed text; OpenAI: the stream
 * ended with its usage, openai-usage.ts); `usage` holds the latest figures (message_start's,
 * overridden by each message_delta's non-null cumulative figures). `textBytes` counts the
 * bytes of text/JSON deltas seen, for estimates.
 */
export interface StreamUsageState {
  sawStart: boolean;
  complete: boolean;
  /**
   * The figures a complete stream carries arrived, its last event or not (Anthropic:
   * message_start's input and a message_delta's output; OpenAI: the usage chunk, or
   * response.completed's usage): on a stream the upstream ended cleanly without its last event
   * (`message_stop`, `[DONE]`), they are the call's usage (meter.ts; some servers leave the
   * terminator out: a fresh tester found such calls counted as estimated).
   */
  usageFinal: boolean;
  /** An `error` event arrived in the stream (e.g. overloaded mid-stream). */
  errored: boolean;
  /**
   * A usage figure the stream reported was not a possible count (usage.ts reportedCount): the
   * usage is unknown (estimated) even when the stream completed; `usage` holds the valid ones.
   */
  invalidUsage: boolean;
  usage: CallUsage;
  textBytes: number;
  /** `message.model` of message_start, when seen. */
  model: string | null;
}

const DELTA_PREFIX = '{"type":"content_block_delta","index":';
const DELTA_TYPE = ',"delta":{"type":"';
const FIELD_TEXT = Buffer.from(',"text":"');

/**
 * UTF-8 bytes of a `content_block_delta`'s text (`text`, `partial_json` or `thinking`) read
 * straight from its data when it has Anthropic's exact shape
 * (`{"type":"content_block_delta","index":N,"delta":{"type":"…","text":"…"}}`), else -1 (the
 * caller parses it). Every token of a streamed reply is one such event, and JSON.parse of it
 * was most of the gateway's own CPU per streamed event (issue 3); only a string literal with
 * escapes is parsed here, as a string.
 */
export function deltaTextBytes(data: string): number {
  if (!data.startsWith(DELTA_PREFIX) || !data.endsWith('"}}')) return -1;
  const d = data.indexOf(DELTA_TYPE, DELTA_PREFIX.length);
  if (d < 0) return -1;
  const typeEnd = data.indexOf('"', d + DELTA_TYPE.length);
  if (typeEnd < 0) return -1;
  // the field after the delta's type: ,"text":" / ,"partial_json":" / ,"thinking":"
  const f = typeEnd + 1;
  const at = data.startsWith(',"text":"', f) ? f + 9 : data.startsWith(',"partial_json":"', f) ? f + 17 : data.startsWith(',"thinking":"', f) ? f + 13 : -1;
  if (at < 0) return -1;
  const raw = data.slice(at, data.length - 3);
  if (raw.indexOf('\\') < 0) return raw.indexOf('"') < 0 ? Buffer.byteLength(raw, 'utf8') : -1;
  try {
    // a quote left unescaped (more fields after the text) makes this throw: parse the whole
    return Buffer.byteLength(JSON.parse(`"${raw}"`) as string, 'utf8');
  } catch {
    return -1;
  }
}

const DELTA_EVENT = Buffer.from('event: content_block_delta\ndata: ');
const DELTA_DATA = Buffer.from(DELTA_PREFIX);
const DELTA_TYPE_BYTES = Buffer.from(DELTA_TYPE);

/** True when `b` holds `prefix` at `at` (a JS loop: short prefixes cost less than Buffer#compare's call into C++). */
function bytesAt(b: Buffer, at: number, prefix: Buffer): boolean {
  if (at + prefix.length > b.length) return false;
  for (let i = 0; i < prefix.length; i++) if (b[at + i] !== prefix[i]) return false;
  return true;
}

/** Where the next `\r` and `\\` of a chunk are (-1: none to its end; -2: not looked for yet): each chunk is searched once for them, however many events it holds. */
interface Marks {
  cr: number;
  bs: number;
}

/**
 * The text bytes ({@link deltaTextBytes}) of the whole `content_block_delta` event at `at` in
 * `b` (`event: content_block_delta`, one `data:` line, a blank line, `\n` line ends) and where
 * the next event starts; null when `b` holds no such whole event there.
 */
function rawDeltaTextBytes(b: Buffer, at: number, marks: Marks): { bytes: number; next: number } | null {
  const p = at + DELTA_EVENT.length;
  if (!bytesAt(b, at, DELTA_EVENT) || !bytesAt(b, p, DELTA_DATA)) return null;
  const end = b.indexOf(10, p);
  if (end < 0 || b[end + 1] !== 10) return null;
  if (marks.cr !== -1 && marks.cr < p) marks.cr = b.indexOf(13, p);
  if (marks.cr !== -1 && marks.cr < end) return null;
  // no quote or backslash inside the text: its bytes as they are (the usual token)
  const typeAt = b.indexOf(DELTA_TYPE_BYTES, p + DELTA_DATA.length);
  const typeEnd = typeAt < 0 || typeAt > end ? -1 : b.indexOf(34, typeAt + DELTA_TYPE.length);
  if (typeEnd > 0 && typeEnd < end - 3 && b[end - 3] === 34 && b[end - 2] === 125 && b[end - 1] === 125) {
    const f = typeEnd + 1;
    const textAt = bytesAt(b, f, FIELD_TEXT) ? f + FIELD_TEXT.length : -1;
    if (textAt > 0 && textAt <= end - 3) {
      const q = b.indexOf(34, textAt);
      if (marks.bs !== -1 && marks.bs < textAt) marks.bs = b.indexOf(92, textAt);
      if (q === end - 3 && (marks.bs === -1 || marks.bs > end)) return { bytes: end - 3 - textAt, next: end + 2 };
    }
  }
  // other fields, escapes: the string reading
  const n = deltaTextBytes(b.toString('utf8', p, end));
  return n < 0 ? null : { bytes: n, next: end + 2 };
}

/**
 * Reads usage out of a Messages SSE stream incrementally: feed it the raw bytes as they pass
 * (chunks may split events, lines and characters anywhere), then call `end()`.
 */
export class StreamUsageReader {
  private readonly parser = new SseParser();
  private readonly figures = new Figures();
  private sawStart = false;
  /** message_stop arrived after message_start. */
  private stopped = false;
  /** message_start's usage gave an input figure. */
  private startUsage = false;
  /** A message_delta gave the (cumulative) output figure. */
  private finalOutput = false;
  private errored = false;
  private textBytes = 0;
  /** `textBytes` when a message_delta gave the final output figure: text past it is not in that figure. */
  private textAtFinal: number | null = null;
  /** `server_tool_use` web_search blocks started (the searches charged when the usage does not say). */
  private searchBlocks = 0;
  private model: string | null = null;
  /** The parser holds nothing: the last chunk it got ended in a blank line (`\n\n`). */
  private clean = true;

  /**
   * Feeds the next chunk. Fast path: while the chunk starts with whole `content_block_delta`
   * events of Anthropic's exact shape (every token of a reply is one) and the parser holds
   * nothing, their text bytes are counted from the raw bytes, without decoding or parsing;
   * the rest of the chunk goes to the SSE parser.
   */
  push(chunk: Uint8Array | string): void {
    if (typeof chunk !== 'string' && this.clean) {
      const b = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
      let at = 0;
      const marks: Marks = { cr: -2, bs: -2 };
      for (;;) {
        const n = rawDeltaTextBytes(b, at, marks);
        if (n === null) break;
        this.textBytes += n.bytes;
        at = n.next;
      }
      if (at === b.length) return;
      chunk = at > 0 ? b.subarray(at) : b;
    }
    for (const ev of this.parser.push(chunk)) this.onEvent(ev.event, ev.data);
    const n = chunk.length;
    this.clean = typeof chunk !== 'string' && n >= 2 && chunk[n - 1] === 10 && chunk[n - 2] === 10;
  }

  end(): StreamUsageState {
    for (const ev of this.parser.end()) this.onEvent(ev.event, ev.data);
    return this.state();
  }

  state(): StreamUsageState {
    return {
      sawStart: this.sawStart,
      // usage is final only with message_start's figures and message_delta's output (H3)
      complete: this.stopped && this.startUsage && this.finalOutput,
      usageFinal: this.startUsage && this.finalOutput,
      errored: this.errored,
      // text after the final output figure (an upstream that reports and then writes on) is not in it: unknown, estimated
      // (and a line over the parser's limit: its event, text or usage, is missing)
      invalidUsage: this.figures.invalid || (this.textAtFinal !== null && this.textBytes > this.textAtFinal) || this.parser.skipped > 0,
      usage: this.figures.toUsage(this.searchBlocks),
      textBytes: this.textBytes + this.parser.skipped,
      model: this.model,
    };
  }

  private onEvent(event: string, data: string): void {
    if (event === 'content_block_delta') {
      const n = deltaTextBytes(data);
      if (n >= 0) {
        this.textBytes += n;
        return;
      }
    }
    let msg: { type?: string; message?: { usage?: unknown; model?: unknown }; usage?: unknown; delta?: { text?: string; partial_json?: string; thinking?: string } };
    try {
      msg = JSON.parse(data) as typeof msg;
    } catch {
      return;
    }
    const type = msg.type ?? event;
    if (type === 'message_start') {
      this.sawStart = true;
      if (typeof msg.message?.model === 'string') this.model = msg.message.model;
      this.figures.apply(msg.message?.usage);
      if (reportedCount((msg.message?.usage as WireUsage | undefined)?.input_tokens) !== null) this.startUsage = true;
    } else if (type === 'message_delta') {
      this.figures.apply(msg.usage);
      if (reportedCount((msg.usage as WireUsage | undefined)?.output_tokens) !== null) {
        this.finalOutput = true;
        this.textAtFinal = this.textBytes;
      }
    } else if (type === 'content_block_start') {
      if (isWebSearchBlock((msg as { content_block?: unknown }).content_block)) this.searchBlocks++;
    } else if (type === 'content_block_delta') {
      const d = msg.delta;
      this.textBytes += Buffer.byteLength(d?.text ?? d?.partial_json ?? d?.thinking ?? '', 'utf8');
    } else if (type === 'message_stop') {
      if (this.sawStart) this.stopped = true;
    } else if (type === 'error') {
      this.errored = true;
    }
  }
}

/**
 * A stand-in usage when the real one could not be read (client gone, upstream broke, a reply
 * without usage): never zero. Input = what message_start reported (input + cache figures as
 * reported: the provider's own count of the call's input, which a cut leaves as it was), or
 * ⌈requestBytes / 4⌉ when nothing was reported (the bytes guess charged a stream of 1,000 input
 * tokens cut by `up` stopping as 10,024: a fresh tester's finding); output = the larger of the last reported
 * output and ⌈textBytes / 4⌉ capped at `maxOutputTokens` (the request's max_tokens: a model
 * stops there, so a huge reply body does not make a huge bill), at least 1; web searches and
 * other built-in tool calls (`toolCalls`) as `partial` has them.
 */
export function estimateUsage(partial: CallUsage | null, requestBytes: number, textBytes: number, maxOutputTokens = Number.MAX_SAFE_INTEGER): CallUsage {
  const p = partial ?? { inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0, cacheWrite1hTokens: 0 };
  const reportedIn = p.inputTokens + p.cacheReadTokens + p.cacheWriteTokens;
  const u: CallUsage = {
    inputTokens: reportedIn > 0 ? p.inputTokens : Math.ceil(requestBytes / 4),
    outputTokens: Math.max(p.outputTokens, Math.min(Math.ceil(textBytes / 4), Math.max(1, maxOutputTokens)), 1),
    cacheReadTokens: p.cacheReadTokens,
    cacheWriteTokens: p.cacheWriteTokens,
    cacheWrite1hTokens: p.cacheWrite1hTokens,
  };
  // web searches seen so far (reported, or their blocks) are kept: they were run, so billed (H4)
  if (p.webSearchRequests) u.webSearchRequests = p.webSearchRequests;
  // so are the other built-in tool calls seen (tool-fees.ts)
  if (p.toolCalls) u.toolCalls = p.toolCalls;
  return u;
}
