import { Readable } from 'node:stream';
import { PushSource } from './push-source.js';

/**
 * A streamed reply body (SSE) with its per-chunk steps as plain synchronous functions, so that
 * an event crosses no promise or async-iterator hop on the node:http path (issue 3: streams add
 * ≤ 2 ms to the first event and keep the upstream's pacing; every async generator in the chain
 * cost several microtasks per event, ~2× a bare proxy's CPU). The steps (meter.ts reading
 * usage, key-mask.ts masking keys, openai-strip.ts dropping the usage chunk) are applied in the
 * order they were added, to each chunk as it arrives; the finish hooks (meter.ts recording the
 * call) run once, when the source ended, broke or its reader stopped, and the reader sees the
 * end of the stream only after they resolved.
 *
 * Two ways to read it, one reader per stream:
 * - push ({@link ChunkStream.pushTo}): each chunk of the source — a {@link PushSource} (an
 *   upstream stream: the chunk comes in undici's own call) or a node Readable's 'data' event —
 *   goes straight through the steps into a sink (node-adapter.ts: `res.write`), pausing the
 *   source while the sink is full; what the node adapter uses;
 * - pull (async iteration): for the web adapter, the scripted provider's users and tests.
 */

/** How a stream finished: its source ended, broke (error), or its reader stopped it early. */
export type StreamEnd = 'ended' | 'broken' | 'cancelled';

/** A synchronous step over a stream's chunks (it may keep state, e.g. a held-back tail). */
export interface ChunkTransform {
  /** Takes the next chunk; returns the bytes to pass on now (an empty buffer: nothing yet). */
  push(chunk: Buffer): Buffer;
  /** The source ended: the bytes held back, if any (called once, after the last push). */
  end?(): Buffer;
}

/** Where {@link ChunkStream.pushTo} writes. */
export interface ChunkSink {
  /** One chunk of output; false = full: the source is paused until the controller's `resume()`. */
  write(chunk: Buffer): boolean;
  /** The stream ended and its finish hooks resolved. */
  end(): void;
  /** The stream broke or was cancelled (finish hooks resolved). */
  fail(err: Error): void;
}

/** What {@link ChunkStream.pushTo} returns. */
export interface PushControl {
  /** The sink has room again (e.g. on 'drain'). */
  resume(): void;
  /** The reader is gone: the source is destroyed (aborting the upstream), hooks run as `cancelled`. A no-op once the source ended. */
  cancel(): void;
}

/** Runs once when the stream finishes; `err` is the source's error when `how` is `broken`. Should not reject (a rejection is swallowed). */
export type FinishHook = (how: StreamEnd, err?: Error) => Promise<void>;

const EMPTY = Buffer.alloc(0);
const asBuffer = (c: Uint8Array | string): Buffer => (Buffer.isBuffer(c) ? c : typeof c === 'string' ? Buffer.from(c) : Buffer.from(c.buffer, c.byteOffset, c.byteLength));

/** See the module comment. */
export class ChunkStream implements AsyncIterable<Uint8Array> {
  private readonly transforms: ChunkTransform[] = [];
  private readonly hooks: FinishHook[] = [];
  private finishing: Promise<void> | null = null;
  private taken = false;

  /** `source`: a {@link PushSource} or node Readable (upstream-http.ts), or any async iterable of chunks. */
  constructor(private readonly source: PushSource | Readable | AsyncIterable<Uint8Array | string>) {}

  /** `s` itself when it is a ChunkStream, else a ChunkStream over it. */
  static from(s: AsyncIterable<Uint8Array | string>): ChunkStream {
    return s instanceof ChunkStream ? s : new ChunkStream(s);
  }

  /** Adds a step after the ones already added. Returns this stream (there is one reader). */
  through(t: ChunkTransform): this {
    this.transforms.push(t);
    return this;
  }

  /** Adds a finish hook (hooks run in the order added, each awaited). Returns this stream. */
  onFinish(hook: FinishHook): this {
    this.hooks.push(hook);
    return this;
  }

  /** True when the source holds bytes already (a write now would carry them with the headers). */
  get buffered(): boolean {
    if (this.source instanceof PushSource) return this.source.buffered;
    return this.source instanceof Readable && this.source.readableLength > 0;
  }

  /** Closes the stream unread (e.g. a reply dropped for a retry): the source is destroyed, hooks run as `cancelled`. */
  destroy(): void {
    if (this.source instanceof Readable || this.source instanceof PushSource) this.source.destroy();
    else void this.source[Symbol.asyncIterator]().return?.();
    void this.finish('cancelled');
  }

  /** The steps over one chunk; an empty result stops the chain (nothing to pass on yet). */
  private apply(chunk: Buffer): Buffer {
    let b = chunk;
    for (let i = 0; i < this.transforms.length && b.length > 0; i++) b = this.transforms[i]!.push(b);
    return b;
  }

  /** The source ended: every step's held-back bytes, each passed through the steps after it. */
  private flush(): Buffer {
    let carry: Buffer = EMPTY;
    for (const t of this.transforms) {
      const b = carry.length > 0 ? t.push(carry) : EMPTY;
      const tail = t.end ? t.end() : EMPTY;
      carry = tail.length === 0 ? b : b.length === 0 ? tail : Buffer.concat([b, tail]);
    }
    return carry;
  }

  /** Runs the hooks once (later calls get the first run's promise). */
  private finish(how: StreamEnd, err?: Error): Promise<void> {
    this.finishing ??= (async () => {
      for (const h of this.hooks) await h(how, err).catch(() => undefined);
    })();
    return this.finishing;
  }

  private take(): void {
    if (this.taken) throw new Error('a ChunkStream has one reader');
    this.taken = true;
  }

  /**
   * Pushes the stream into `sink`: each source chunk through the steps and into `sink.write`
   * synchronously from the source's 'data' event; the source pauses when `write` returns false
   * until `resume()`. At the source's end: the held-back bytes are written after the hooks ran,
   * then `sink.end()`. On a source error or `cancel()`: hooks, then `sink.fail`.
   * @throws when the stream already has a reader.
   */
  pushTo(sink: ChunkSink): PushControl {
    this.take();
    if (this.source instanceof PushSource) return this.pushFrom(this.source, sink);
    const src = this.source instanceof Readable ? this.source : Readable.from(this.source);
    let over = false;
    let cancelled = false;
    const cleanup = () => {
      over = true;
      src.off('data', onData);
      src.off('end', onEnd);
      src.off('error', onError);
      src.off('close', onClose);
    };
    const onData = (c: Buffer | Uint8Array | string) => {
      const out = this.apply(asBuffer(c));
      if (out.length > 0 && !sink.write(out)) src.pause();
    };
    const onEnd = () => {
      cleanup();
      const tail = this.flush();
      void this.finish('ended').then(() => {
        if (tail.length > 0) sink.write(tail);
        sink.end();
      });
    };
    const onError = (err: Error) => {
      cleanup();
      void this.finish(cancelled ? 'cancelled' : 'broken', err).then(() => sink.fail(err));
    };
    const onClose = () => {
      // destroyed without an error (cancel(), or destroyed by its owner)
      cleanup();
      void this.finish('cancelled').then(() => sink.fail(new Error('the stream was closed before its end')));
    };
    if (src.destroyed) {
      // e.g. the client went away while the reply was on its way: the upstream was aborted
      const err = src.errored;
      queueMicrotask(() => (err ? onError(err) : onClose()));
      over = true;
    } else {
      src.on('error', onError);
      src.on('close', onClose);
      src.on('end', onEnd);
      src.on('data', onData);
    }
    return {
      resume: () => {
        if (!over) src.resume();
      },
      cancel: () => {
        if (over) return;
        cancelled = true;
        src.destroy();
      },
    };
  }

  /** {@link pushTo} from a {@link PushSource}: its reader is the steps, then `sink`. */
  private pushFrom(src: PushSource, sink: ChunkSink): PushControl {
    let cancelled = false;
    src.attach({
      data: (c) => {
        const out = this.apply(c);
        return out.length === 0 || sink.write(out);
      },
      end: () => {
        const tail = this.flush();
        void this.finish('ended').then(() => {
          if (tail.length > 0) sink.write(tail);
          sink.end();
        });
      },
      error: (err) => void this.finish(cancelled ? 'cancelled' : 'broken', err).then(() => sink.fail(err)),
      close: () => void this.finish('cancelled').then(() => sink.fail(new Error('the stream was closed before its end'))),
    });
    return {
      resume: () => src.resume(),
      cancel: () => {
        cancelled = true;
        src.destroy();
      },
    };
  }

  /** The pull side: chunks after the steps; returning early destroys the source (hooks: `cancelled`). */
  async *[Symbol.asyncIterator](): AsyncGenerator<Uint8Array> {
    this.take();
    let ended = false;
    try {
      for await (const c of this.source as AsyncIterable<Uint8Array | string>) {
        const out = this.apply(asBuffer(c));
        if (out.length > 0) yield out;
      }
      ended = true;
      const tail = this.flush();
      await this.finish('ended');
      if (tail.length > 0) yield tail;
    } catch (err) {
      if (!ended) await this.finish('broken', err as Error);
      throw err;
    } finally {
      if (!ended) await this.finish('cancelled');
    }
  }
}
