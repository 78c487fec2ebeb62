/**
 * An incremental parser for `text/event-stream` (the WHATWG "server-sent events" format).
 *
 * Feed it decoded text in chunks of any size with {@link SseParser.push}; it returns the
 * events completed by that chunk. Handles: a line (or a field name, or a CR LF pair) split
 * across chunks; LF, CR LF and lone CR line endings; comment lines (`: ping`); multi-line
 * `data:` (joined with `\n`); a leading byte-order mark; `id:` (remembered as
 * {@link SseParser.lastEventId}, ignored when it contains NUL); `retry:` (digits only).
 * An event is dispatched at a blank line; one with no `data:` line is not dispatched.
 */

/** One dispatched event. `event` defaults to `message`; `id` is the last event id seen so far ('' when none). */
export interface SseEvent {
  event: string;
  data: string;
  id: string;
  /** Reconnection time the server asked for, in ms, when this event carried a `retry:` field. */
  retry?: number;
}

export class SseParser {
  private buffer = '';
  private pendingCr = false;
  private started = false;
  private dataLines: string[] = [];
  private hasData = false;
  private eventType = '';
  private retry: number | undefined;
  /** The id of the last `id:` field seen (the value to resend as `Last-Event-ID`). */
  lastEventId = '';

  /** Parses one chunk of text; returns the events it completed, in order. */
  push(chunk: string): SseEvent[] {
    if (!this.started && chunk.length > 0) {
      this.started = true;
      if (chunk.charCodeAt(0) === 0xfeff) chunk = chunk.slice(1);
    }
    const out: SseEvent[] = [];
    let text = chunk;
    // A CR ended the previous chunk: a LF that starts this one belongs to the same line break.
    if (this.pendingCr) {
      this.pendingCr = false;
      if (text.startsWith('\n')) text = text.slice(1);
    }
    let start = 0;
    for (let i = 0; i < text.length; i++) {
      const c = text.charCodeAt(i);
      if (c !== 10 && c !== 13) continue;
      const line = this.buffer + text.slice(start, i);
      this.buffer = '';
      this.line(line, out);
      if (c === 13) {
        if (i + 1 < text.length) {
          if (text.charCodeAt(i + 1) === 10) i++;
        } else {
          this.pendingCr = true;
        }
      }
      start = i + 1;
    }
    this.buffer += text.slice(start);
    return out;
  }

  /**
   * Ends the stream. Per the standard, an event not yet terminated by a blank line is
   * discarded; returns [] (kept as a method so callers can treat end like a chunk).
   */
  end(): SseEvent[] {
    this.buffer = '';
    this.pendingCr = false;
    this.resetEvent();
    return [];
  }

  private line(line: string, out: SseEvent[]): void {
    if (line === '') {
      this.dispatch(out);
      return;
    }
    if (line.startsWith(':')) return; // comment
    const colon = line.indexOf(':');
    let field: string;
    let value: string;
    if (colon === -1) {
      field = line;
      value = '';
    } else {
      field = line.slice(0, colon);
      value = line.slice(colon + 1);
      if (value.startsWith(' ')) value = value.slice(1);
    }
    switch (field) {
      case 'data':
        this.dataLines.push(value);
        this.hasData = true;
        break;
      case 'event':
        this.eventType = value;
        break;
      case 'id':
        if (!value.includes('\u0000')) this.lastEventId = value;
        break;
      case 'retry':
        if (/^[0-9]+$/.test(value)) this.retry = Number(value);
        break;
      default:
        break; // unknown fields are ignored
    }
  }

  private dispatch(out: SseEvent[]): void {
    if (this.hasData) {
      const ev: SseEvent = { event: this.eventType || 'message', data: this.dataLines.join('\n'), id: this.lastEventId };
      if (this.retry !== undefined) ev.retry = this.retry;
      out.push(ev);
    }
    this.resetEvent();
  }

  private resetEvent(): void {
    this.dataLines = [];
    this.hasData = false;
    this.eventType = '';
    this.retry = undefined;
  }
}

/** A byte source: a web `ReadableStream` (fetch's `Response.body`) or any async iterable of chunks. */
export type ByteSource = ReadableStream<Uint8Array> | AsyncIterable<Uint8Array>;

async function* chunksOf(source: ByteSource): AsyncGenerator<Uint8Array> {
  if (!('getReader' in source)) {
    yield* source;
    return;
  }
  const reader = source.getReader();
  let done = false;
  try {
    while (true) {
      const r = await reader.read();
      if (r.done) {
        done = true;
        return;
      }
      yield r.value;
    }
  } finally {
    // Stopped early (consumer broke out, or an error): release the connection.
    if (!done) await reader.cancel().catch(() => undefined);
    reader.releaseLock();
  }
}

/**
 * Parses a byte stream (e.g. a fetch `Response.body`) into SSE events, decoding UTF-8
 * incrementally (a character split across chunks is joined). `parser` may be given to read
 * its `lastEventId` afterwards. Leaving the loop early cancels the stream.
 */
export async function* parseSseStream(body: ByteSource, parser: SseParser = new SseParser()): AsyncGenerator<SseEvent> {
  const decoder = new TextDecoder('utf-8');
  for await (const chunk of chunksOf(body)) {
    for (const ev of parser.push(decoder.decode(chunk, { stream: true }))) yield ev;
  }
  for (const ev of parser.push(decoder.decode())) yield ev;
  parser.end();
}
