/** One server-sent event: its `event:` name (default `message`) and its `data:` lines joined by `\n`. */
export interface SseEvent {
  event: string;
  data: string;
}

/**
 * Incremental parser for a `text/event-stream` body (the WHATWG rules that matter here):
 * bytes arrive in arbitrary chunks — a chunk may end mid-line or mid UTF-8 character — and
 * events come out once their terminating blank line has arrived. Lines end in `\n`, `\r\n`
 * or `\r`; `:` lines are comments; `id:`/`retry:` are ignored.
 */
export class SseParser {
  private readonly decoder = new TextDecoder('utf-8');
  private buffer = '';
  private eventName = '';
  private dataLines: string[] = [];
  /** True when the last chunk ended in `\r`, so a leading `\n` in the next one is the same line end. */
  private pendingCr = false;

  /**
   * Feeds a chunk; returns the events it completed (possibly none). Lines are found with
   * indexOf from a moving start (no regex, no re-slicing of the buffer per line): every event of
   * every streamed call passes through here.
   */
  push(chunk: Uint8Array | string): SseEvent[] {
    let text = typeof chunk === 'string' ? chunk : this.decoder.decode(chunk, { stream: true });
    if (this.pendingCr && text.charCodeAt(0) === 10) text = text.slice(1);
    this.pendingCr = false;
    const buf = this.buffer ? this.buffer + text : text;
    const out: SseEvent[] = [];
    let start = 0;
    let cr = buf.indexOf('\r');
    for (;;) {
      if (cr !== -1 && cr < start) cr = buf.indexOf('\r', start);
      const lf = buf.indexOf('\n', start);
      let end: number;
      let next: number;
      if (cr !== -1 && (lf === -1 || cr < lf)) {
        end = cr;
        if (cr + 1 < buf.length) next = buf.charCodeAt(cr + 1) === 10 ? cr + 2 : cr + 1;
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
      const ev = this.line(buf.slice(start, end));
      if (ev) out.push(ev);
      start = next;
    }
    this.buffer = start === 0 ? buf : buf.slice(start);
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
