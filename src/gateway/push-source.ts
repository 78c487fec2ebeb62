/**
 * A streamed upstream body (SSE) handed from undici's `onData` straight to its one reader, with
 * no node Readable in between (issue 3: streams keep the upstream's pacing and add ≤ 2 ms to
 * the first event). A Readable cost every chunk a push, a `maybeReadMore` tick, a `read(0)` and
 * a call of undici's `resume` (~10% of the gateway's CPU on 64 concurrent streams, --cpu-prof).
 *
 * The producer (upstream-http.ts) calls {@link PushSource.push} per chunk, then `end()` or
 * `fail(err)`; `push` returning false means "pause until `resume` of the producer's control
 * runs". The reader either attaches ({@link PushSource.attach}: chunks arrive in the producer's
 * own call, chunk-stream.ts pushTo) or iterates it (async iterable: tests, the web adapter).
 * Chunks that come before a reader are kept (up to {@link PushSource.highWaterMark} bytes before
 * the producer is paused) and handed over, in order, once it comes; so are the chunks kept when
 * the producer fails (then the error) — only a reader that stops early drops what is kept.
 */

/** What a {@link PushSource} calls on its producer. */
export interface ProducerControl {
  /** The reader has room again: the producer may push more. */
  resume(): void;
  /** The reader stopped before the end: stop producing (undici: abort the request). */
  abort(err: Error): void;
}

/** The reader of {@link PushSource.attach}. */
export interface PushReader {
  /** One chunk; false = full: no more until the reader calls {@link PushSource.resume}. */
  data(chunk: Buffer): boolean;
  /** The body ended (after the last chunk). */
  end(): void;
  /** The body broke (the producer's error). */
  error(err: Error): void;
  /** The stream was destroyed without an error before its end. */
  close(): void;
}

type State = 'open' | 'ended' | 'failed' | 'destroyed';

/** See the module comment. */
export class PushSource implements AsyncIterable<Uint8Array> {
  /** Bytes kept for a reader that is not there or not asking before the producer is paused (node's Readable default). */
  static readonly highWaterMark = 16 * 1024;
  private readonly queue: Buffer[] = [];
  private queued = 0;
  private state: State = 'open';
  private error: Error | null = null;
  private reader: PushReader | null = null;
  /** The attached reader got the end or the error. */
  private told = false;
  /** The producer was told to pause (push returned false). */
  private paused = false;
  /** The reader asked for no more until resume(). */
  private full = false;
  private wake: (() => void) | null = null;

  constructor(private readonly control: ProducerControl) {}

  /** True when chunks wait for the reader. */
  get buffered(): boolean {
    return this.queued > 0;
  }

  /** True once the stream ended, failed or was destroyed. */
  get destroyed(): boolean {
    return this.state === 'failed' || this.state === 'destroyed';
  }

  /**
   * The producer's next chunk.
   * @returns false when the producer should pause until the control's `resume` runs.
   */
  push(chunk: Buffer): boolean {
    if (this.state !== 'open') return false;
    if (this.reader && !this.full && this.queued === 0) {
      if (this.reader.data(chunk)) return true;
      this.full = true;
      this.paused = true;
      return false;
    }
    this.queue.push(chunk);
    this.queued += chunk.byteLength;
    this.wake?.();
    if (this.full || this.queued >= PushSource.highWaterMark) this.paused = true;
    return !this.paused;
  }

  /** The producer's body ended. */
  end(): void {
    if (this.state !== 'open') return;
    this.state = 'ended';
    this.drain();
    this.wake?.();
  }

  /**
   * The producer's body broke with `err`. What it pushed before is still handed over (a
   * decoded stream's reader lags behind the socket: a cut gzip stream lost most of what had
   * arrived), then the error.
   */
  fail(err: Error): void {
    if (this.state !== 'open') return;
    this.state = 'failed';
    this.error = err;
    this.drain();
    this.wake?.();
  }

  /**
   * The reader stops early (or the owner drops the stream): the producer is aborted (undici
   * closes the request) and the reader's `close` (or `error`, with `err`) runs. Nothing after
   * the end.
   */
  destroy(err?: Error): void {
    if (this.state !== 'open' && !((this.state === 'ended' || this.state === 'failed') && this.queued > 0)) return;
    const wasOpen = this.state === 'open';
    this.state = err ? 'failed' : 'destroyed';
    this.error = err ?? null;
    this.queue.length = 0;
    this.queued = 0;
    if (wasOpen) this.control.abort(err ?? new DOMException('aborted', 'AbortError'));
    if (this.reader && !this.told) {
      this.told = true;
      if (err) this.reader.error(err);
      else this.reader.close();
    }
    this.wake?.();
  }

  /** The attached reader has room again. */
  resume(): void {
    this.full = false;
    this.drain();
  }

  /**
   * Attaches the one reader: what is kept is handed over first (from a microtask, as are an
   * end, error or close that came before it), then each chunk as the producer pushes it.
   * @throws when a reader is attached already or the stream is being iterated.
   */
  attach(reader: PushReader): void {
    if (this.reader || this.wake) throw new Error('a PushSource has one reader');
    this.reader = reader;
    queueMicrotask(() => {
      if (this.state !== 'destroyed') return this.drain();
      if (this.told) return; // destroy() after attach told it already
      this.told = true;
      reader.close();
    });
  }

  /** Hands kept chunks to the attached reader while it takes them; then the end, if it came. */
  private drain(): void {
    const r = this.reader;
    if (!r) return;
    while (this.queue.length > 0 && !this.full && this.state !== 'destroyed') {
      const c = this.queue.shift()!;
      this.queued -= c.byteLength;
      if (!r.data(c)) this.full = true;
    }
    if (this.queue.length > 0 || (this.full && this.state === 'open')) return;
    if (this.state === 'ended' || this.state === 'failed') {
      if (this.told) return;
      this.told = true;
      return this.state === 'ended' ? r.end() : r.error(this.error!);
    }
    if (this.paused && this.state === 'open') {
      this.paused = false;
      this.control.resume();
    }
  }

  /** The pull side; returning early destroys the stream (aborting the producer). */
  async *[Symbol.asyncIterator](): AsyncGenerator<Uint8Array> {
    if (this.reader || this.wake) throw new Error('a PushSource has one reader');
    this.wake = () => undefined;
    let done = false;
    try {
      for (;;) {
        if (this.queue.length > 0) {
          const c = this.queue.shift()!;
          this.queued -= c.byteLength;
          if (this.paused && this.queued < PushSource.highWaterMark && this.state === 'open') {
            this.paused = false;
            this.control.resume();
          }
          yield c;
          continue;
        }
        if (this.state === 'failed') throw this.error!;
        if (this.state === 'destroyed') throw new Error('the stream was closed before its end');
        if (this.state === 'ended') {
          done = true;
          return;
        }
        await new Promise<void>((r) => (this.wake = r));
      }
    } finally {
      this.wake = null;
      if (!done) this.destroy();
    }
  }
}
