/** One server-sent event: its `event:` name (default `message`) and its `data:` lines joined by `\n`. */
export interface SseEvent {
  event: string;
  data: string;
}

/**
 * Longest line the parser keeps, in UTF-16 code units: 64 Mi (an SSE line of a model's reply is
 * one JSON event, at most a few MB in practice). A longer line is dropped whole, as an unknown
 * field is: its event is then missing (usage unknown: the meter charges an estimate, marked as
 * one), and the parser's memory stays bounded whatever the upstream sends.
 */
export const MAX_SSE_LINE = 64 * 1024 * 1024;

/**
 * Incremental parser for a `text/event-stream` body (the WHATWG rules that matter here):
 * bytes arrive in arbitrary chunks — a chunk may end mid-line or mid UTF-8 character — and
 * events come out once their terminating blank line has arrived. Lines end in `\n`, `\r\n`
 * or `\r`; `:` lines are comments; `id:`/`retry:` are ignored. Work is linear in the bytes
 * pushed: each chunk is searched once for line ends, never the part of a line held from
 * earlier chunks (it holds none: fresh-user finding, one 40 MB event took 18 s of the event
 * loop when every chunk searched the whole line again).
 */
export class SseParser {
  private readonly decoder = new TextDecoder('utf-8');
  /** The start of a line whose end has not arrived yet (never holds a line end). */
  private partial = '';
  /** True while the line being read is over {@link MAX_SSE_LINE}: its rest is skipped. */
  private skipping = false;
  /**
   * Characters of the lines skipped for being over the limit (UTF-16 code units): their events
   * are missing, so a reader counts them as text for its estimate and takes the usage as unknown
   * (fresh-tester finding: a 64 MiB text delta reached the client and was charged 1 output token).
   */
  skipped = 0;
  private eventName = '';
  private dataLines: string[] = [];
  /** True when the last chunk ended in `\r`, so a leading `\n` in the next one is the same line end. */
  private pendingCr = false;

  /** @param maxLine the longest line kept, UTF-16 code units ({@link MAX_SSE_LINE}; tests lower it). */
  constructor(private readonly maxLine = MAX_SSE_LINE) {}

  /**
   * Feeds a chunk; returns the events it completed (possibly none). Lines are found with
   * indexOf from a moving start (no regex, no re-slicing of the chunk per line): every event of
   * every streamed call passes through here.
   */
  push(chunk: Uint8Array | string): SseEvent[] {
    let text = typeof chunk === 'string' ? chunk : this.decoder.decode(chunk, { stream: true });
    if (this.pendingCr && text.charCodeAt(0) === 10) text = text.slice(1);
    this.pendingCr = false;
    const out: SseEvent[] = [];
    let start = 0;
    let cr = text.indexOf('\r');
    for (;;) {
      if (cr !== -1 && cr < start) cr = text.indexOf('\r', start);
      const lf = text.indexOf('\n', start);
      let end: number;
      let next: number;
      if (cr !== -1 && (lf === -1 || cr < lf)) {
        end = cr;
        if (cr + 1 < text.length) next = text.charCodeAt(cr + 1) === 10 ? cr + 2 : cr + 1;
        else {
          // A `\r` at the very end may be the first half of `\r\n`: treat it as the line end and
          // swallow a `\n` that starts the next chunk.
          next = cr + 1;
          this.pendingCr = true;
        }
      } else if (lf !== -1) {
        end = lf;
        next = lf + 1;
      } else break;
      if (this.skipping) {
        this.skipped += end - start;
        this.skipping = false;
      } else {
        const piece = text.slice(start, end);
        const ev = this.line(this.partial === '' ? piece : this.partial + piece);
        if (ev) out.push(ev);
      }
      this.partial = '';
      start = next;
    }
    if (start < text.length && this.skipping) this.skipped += text.length - start;
    else if (start < text.length) {
      // V8 joins these as a rope: appending is O(1), the line is flattened once when it ends
      this.partial = this.partial + (start === 0 ? text : text.slice(start));
      if (this.partial.length > this.maxLine) {
        this.skipped += this.partial.length;
        this.partial = '';
        this.skipping = true;
      }
    }
    return out;
  }

  /** The stream ended: flushes the decoder. An event without its final blank line is dropped (per spec). */
  end(): SseEvent[] {
    const rest = this.decoder.decode();
    return rest ? this.push(rest) : [];
  }

  private line(line: string): SseEvent | null {
    if (line === '') {
      if (this.dataLines.length === 0) {
        this.eventName = '';
        return null;
      }
      const ev = { event: this.eventName || 'message', data: this.dataLines.join('\n') };
      this.eventName = '';
      this.dataLines = [];
      return ev;
    }
    if (line.startsWith(':')) return null;
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'event') this.eventName = value;
    else if (field === 'data') this.dataLines.push(value);
    return null;
  }
}
