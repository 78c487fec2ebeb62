import type { TokenUsage } from '../protocol/index.js';
import { SseParser } from './sse.js';

/**
 * Token usage of one model call, in tokens. `inputTokens` excludes cache reads and writes
 * (Anthropic's `input_tokens`); `cacheReadTokens` = `cache_read_input_tokens`;
 * `cacheWriteTokens` = `cache_creation_input_tokens`, of which `cacheWrite1hTokens` were
 * written with the 1-hour lifetime (from `cache_creation.ephemeral_1h_input_tokens`).
 */
export type CallUsage = TokenUsage & { cacheWrite1hTokens: number };

/** An Anthropic `usage` object as far as we read it; any field may be absent or null. */
interface WireUsage {
  input_tokens?: number | null;
  output_tokens?: number | null;
  cache_read_input_tokens?: number | null;
  cache_creation_input_tokens?: number | null;
  cache_creation?: { ephemeral_1h_input_tokens?: number | null } | null;
}

function count(v: unknown): number | null {
  return typeof v === 'number' && Number.isFinite(v) && v >= 0 ? Math.round(v) : null;
}

/** Mutable accumulator: each figure is the latest non-null value seen (they are cumulative). */
class Figures {
  input: number | null = null;
  output: number | null = null;
  cacheRead: number | null = null;
  cacheWrite: number | null = null;
  cacheWrite1h: number | null = null;

  apply(u: unknown): void {
    if (u === null || typeof u !== 'object') return;
    const w = u as WireUsage;
    this.input = count(w.input_tokens) ?? this.input;
    this.output = count(w.output_tokens) ?? this.output;
    this.cacheRead = count(w.cache_read_input_tokens) ?? this.cacheRead;
    this.cacheWrite = count(w.cache_creation_input_tokens) ?? this.cacheWrite;
    this.cacheWrite1h = count(w.cache_creation?.ephemeral_1h_input_tokens) ?? this.cacheWrite1h;
  }

  toUsage(): CallUsage {
    return {
      inputTokens: this.input ?? 0,
      outputTokens: this.output ?? 0,
      cacheReadTokens: this.cacheRead ?? 0,
      cacheWriteTokens: this.cacheWrite ?? 0,
      cacheWrite1hTokens: this.cacheWrite1h ?? 0,
    };
  }
}

/**
 * Usage of a non-streamed Messages reply (`{..., "usage": {...}}`), or null when the body has
 * no readable `usage` with at least input and output figures.
 */
export function usageFromMessage(body: unknown): CallUsage | null {
  if (body === null || typeof body !== 'object') return null;
  const u = (body as { usage?: unknown }).usage;
  if (u === null || typeof u !== 'object') return null;
  const w = u as WireUsage;
  if (count(w.input_tokens) === null || count(w.output_tokens) === null) return null;
  const f = new Figures();
  f.apply(u);
  return f.toUsage();
}

/**
 * What a streamed reply's events said so far. `complete` is true once `message_stop` arrived
 * after a `message_start` (only then is the usage final); `usage` holds the latest figures
 * (message_start's, overridden by each message_delta's non-null cumulative figures).
 * `textBytes` counts the bytes of text/JSON deltas seen, for estimates.
 */
export interface StreamUsageState {
  sawStart: boolean;
  complete: boolean;
  /** An `error` event arrived in the stream (e.g. overloaded mid-stream). */
  errored: boolean;
  usage: CallUsage;
  textBytes: number;
  /** `message.model` of message_start, when seen. */
  model: string | null;
}

/**
 * Reads usage out of a Messages SSE stream incrementally: feed it the raw bytes as they pass
 * (chunks may split events, lines and characters anywhere), then call `end()`.
 */
export class StreamUsageReader {
  private readonly parser = new SseParser();
  private readonly figures = new Figures();
  private sawStart = false;
  private complete = false;
  private errored = false;
  private textBytes = 0;
  private model: string | null = null;

  push(chunk: Uint8Array | string): void {
    for (const ev of this.parser.push(chunk)) this.onEvent(ev.event, ev.data);
  }

  end(): StreamUsageState {
    for (const ev of this.parser.end()) this.onEvent(ev.event, ev.data);
    return this.state();
  }

  state(): StreamUsageState {
    return {
      sawStart: this.sawStart,
      complete: this.complete,
      errored: this.errored,
      usage: this.figures.toUsage(),
      textBytes: this.textBytes,
      model: this.model,
    };
  }

  private onEvent(event: string, data: string): void {
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
    } else if (type === 'message_delta') {
      this.figures.apply(msg.usage);
    } else if (type === 'content_block_delta') {
      const d = msg.delta;
      this.textBytes += Buffer.byteLength(d?.text ?? d?.partial_json ?? d?.thinking ?? '', 'utf8');
    } else if (type === 'message_stop') {
      if (this.sawStart) this.complete = true;
    } else if (type === 'error') {
      this.errored = true;
    }
  }
}

/**
 * A stand-in usage when the real one could not be read (client gone, upstream broke, a reply
 * without usage): never zero. Input = the larger of what message_start reported (input + cache
 * figures kept as reported) and ⌈requestBytes / 4⌉; output = the larger of the last reported
 * output and ⌈textBytes / 4⌉ capped at `maxOutputTokens` (the request's max_tokens: a model
 * stops there, so a huge reply body does not make a huge bill), at least 1.
 */
export function estimateUsage(partial: CallUsage | null, requestBytes: number, textBytes: number, maxOutputTokens = Number.MAX_SAFE_INTEGER): CallUsage {
  const p = partial ?? { inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0, cacheWrite1hTokens: 0 };
  const reportedIn = p.inputTokens + p.cacheReadTokens + p.cacheWriteTokens;
  const byBytes = Math.ceil(requestBytes / 4);
  return {
    inputTokens: reportedIn >= byBytes ? p.inputTokens : byBytes - p.cacheReadTokens - p.cacheWriteTokens,
    outputTokens: Math.max(p.outputTokens, Math.min(Math.ceil(textBytes / 4), Math.max(1, maxOutputTokens)), 1),
    cacheReadTokens: p.cacheReadTokens,
    cacheWriteTokens: p.cacheWriteTokens,
    cacheWrite1hTokens: p.cacheWrite1hTokens,
  };
}
