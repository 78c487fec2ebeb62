import type { Transform } from 'node:stream';
import { promisify } from 'node:util';
import { brotliDecompress, createBrotliDecompress, createGunzip, createInflate, gunzip, inflate } from 'node:zlib';
import { Pool, util as undiciUtil, type Dispatcher } from 'undici';
import type { CallSignal, Reply } from './reply.js';
import { PushSource } from './push-source.js';

/**
 * Upstream calls over undici's dispatcher API (one keep-alive connection pool per origin).
 * Measured with bench/gateway-cpu.bench.js: node:http's client cost ~45–60 µs of CPU per call
 * here, undici's `dispatch` ~25 µs, and Node 20's built-in fetch (undici behind web streams)
 * ~10× more; the gateway's whole point is to add almost nothing. No web streams: the reply's
 * body is a Buffer, or for `text/event-stream` a live {@link PushSource} (push-source.ts: each chunk
 * handed from undici to the reader as it arrives, honouring backpressure; with a
 * `content-encoding` of gzip/deflate/br, or a stack of them such as `gzip, gzip`, the decoded
 * chunks, and `content-encoding` and `content-length` are dropped).
 * `signal` aborts the request (and the body). Redirects are not followed. Timeouts: the reply's
 * headers within {@link UPSTREAM_HEADERS_TIMEOUT_MS} of the request being sent, then at most
 * {@link UPSTREAM_BODY_TIMEOUT_MS} between two body chunks ({@link UpstreamTimeoutError}): a hung
 * upstream must not keep a job stuck.
 */
const pools = new Map<string, Pool>();

/**
 * Longest wait for an upstream reply's headers after the request was sent, ms: 10 minutes. A
 * non-streamed call sends nothing until the model has finished (a reasoning model may think for
 * many minutes first), so this is generous; past it the upstream is taken as hung.
 */
export const UPSTREAM_HEADERS_TIMEOUT_MS = 10 * 60_000;

/**
 * Longest silence between two chunks of an upstream reply body (whole or streamed), ms: 5
 * minutes. Streams send events (or pings) far more often; a body silent that long is hung. Time
 * in which the gateway's own reader holds the body back (backpressure) does not count.
 */
export const UPSTREAM_BODY_TIMEOUT_MS = 5 * 60_000;

/** The timeouts in force (the constants unless {@link setUpstreamTimeouts} changed them), ms. */
let timeouts = { headersMs: UPSTREAM_HEADERS_TIMEOUT_MS, bodyMs: UPSTREAM_BODY_TIMEOUT_MS };

/**
 * Sets the upstream timeouts for this process, ms (tests lower them to exercise a stalled
 * upstream without waiting minutes); a field left out gets its constant back.
 * @throws RangeError for a value that is not a positive integer.
 */
export function setUpstreamTimeouts(t: { headersMs?: number; bodyMs?: number } = {}): void {
  const next = { headersMs: t.headersMs ?? UPSTREAM_HEADERS_TIMEOUT_MS, bodyMs: t.bodyMs ?? UPSTREAM_BODY_TIMEOUT_MS };
  for (const [k, v] of Object.entries(next)) if (!Number.isSafeInteger(v) || v < 1) throw new RangeError(`${k}: must be a positive integer, got ${v}`);
  timeouts = next;
}

/**
 * The upstream took longer than a timeout: `headers` (no reply within
 * {@link UPSTREAM_HEADERS_TIMEOUT_MS}) or `body` (a reply body silent for
 * {@link UPSTREAM_BODY_TIMEOUT_MS}). The upstream had the request and may have worked on it (and
 * bill it), so it is not retried (`noRetry`: retry.ts; a retry would also wait as long again) and
 * the call is charged an estimate (upstream-timeout.ts); a stream cut by it is charged as any
 * broken stream (meter.ts).
 */
export class UpstreamTimeoutError extends Error {
  readonly noRetry = true;
  constructor(
    /** Which wait ran out. */
    readonly phase: 'headers' | 'body',
    /** The timeout, ms. */
    readonly ms: number,
    /** The reply's HTTP status (0: no headers came). */
    readonly status: number,
    /** Bytes of a whole reply body received before it stalled (0 for `headers` and for streams). */
    readonly bytes: number,
  ) {
    super(phase === 'headers' ? `the upstream sent no reply within ${ms} ms` : `the upstream's reply (HTTP ${status}) stalled: no data for ${ms} ms`);
    this.name = 'UpstreamTimeoutError';
  }
}

function poolFor(origin: string): Pool {
  let p = pools.get(origin);
  if (!p) {
    p = new Pool(origin, { connections: 512, pipelining: 1, headersTimeout: UPSTREAM_HEADERS_TIMEOUT_MS, bodyTimeout: UPSTREAM_BODY_TIMEOUT_MS, keepAliveTimeout: 10_000 });
    pools.set(origin, p);
  }
  return p;
}

/** Where a URL goes: its origin's pool and its path + query. */
interface Target {
  origin: string;
  path: string;
  pool: Pool;
}

/** Most URLs whose {@link Target} is kept (a gateway calls a handful: base URL × route). */
const MAX_TARGETS = 1024;
const targets = new Map<string, Target>();

/**
 * The parsed `url`, kept: every call of a route goes to the same URL, and `new URL` with its
 * origin and path was ~0.4 µs of CPU per call. @throws as `new URL` does (an invalid URL).
 */
function targetOf(url: string): Target {
  let t = targets.get(url);
  if (t === undefined) {
    const u = new URL(url);
    t = { origin: u.origin, path: u.pathname + u.search, pool: poolFor(u.origin) };
    if (targets.size >= MAX_TARGETS) targets.clear();
    targets.set(url, t);
  }
  return t;
}

/**
 * Most bytes of a whole (not streamed) reply body, raw or decoded: 64 MiB. A model's reply is a
 * few MB at most (128k output tokens ≈ 0.5 MB of text); a bigger one, or a small gzip body that
 * unpacks to hundreds of MB, is refused as an upstream failure rather than held in memory.
 */
export const MAX_REPLY_BYTES = 64 * 1024 * 1024;

/** The limit in force ({@link MAX_REPLY_BYTES} unless {@link setMaxReplyBytes} changed it). */
let replyLimit = MAX_REPLY_BYTES;

/**
 * Sets the whole-reply size limit in bytes for this process (tests lower it to exercise the
 * refusal without sending 64 MiB); no argument restores {@link MAX_REPLY_BYTES}.
 * @throws RangeError for a limit that is not a positive integer.
 */
export function setMaxReplyBytes(bytes: number = MAX_REPLY_BYTES): void {
  if (!Number.isSafeInteger(bytes) || bytes < 1) throw new RangeError(`maxReplyBytes: must be a positive integer, got ${bytes}`);
  replyLimit = bytes;
}

/**
 * A whole reply over the size limit (raw bytes, or decoded: `bytes` is how many were seen
 * before the gateway stopped reading). For a 2xx reply the provider did the work and billed it,
 * so it is not retried (`noRetry`: retry.ts) and the gateway charges the call at its worst-case
 * estimate (upstream-too-large.ts); a too-big error reply (not billed) may be retried.
 */
export class ReplyTooLargeError extends Error {
  /** True for a 2xx reply: another call would bill the same work again. */
  readonly noRetry: boolean;
  constructor(
    /** The upstream's HTTP status. */
    readonly status: number,
    /** The limit in bytes. */
    readonly limit: number,
    /** Bytes seen (raw or decoded) when reading stopped: more than `limit`. */
    readonly bytes: number,
  ) {
    super(`the upstream's reply (HTTP ${status}) is over the ${limit}-byte size limit`);
    this.name = 'ReplyTooLargeError';
    this.noRetry = status >= 200 && status < 300;
  }
}

/**
 * A whole 2xx reply whose body could not be read or decoded after its headers came: the
 * connection reset mid-body, or a `content-encoding` body that does not decode (a corrupt gzip
 * stream). The provider served the call and bills it, so it is not retried (`noRetry`: another
 * call would bill the same work again) and it is charged an estimate, marked as one
 * (upstream-broken.ts). (A broken stream needs nothing of this: the meter charges it.)
 */
export class ReplyBrokenError extends Error {
  readonly noRetry = true;
  constructor(
    /** The upstream's HTTP status (2xx), or 0 when a reply began and its head could not be read. */
    readonly status: number,
    /** Bytes of the body received (raw) before it broke. */
    readonly bytes: number,
    /** What broke it (the socket's or the decoder's error message). */
    readonly reason: string,
  ) {
    super(status === 0 ? `the upstream's reply could not be read: ${reason}` : `the upstream's reply (HTTP ${status}) broke after ${bytes} body bytes: ${reason}`);
    this.name = 'ReplyBrokenError';
  }
}

/**
 * The upstream connection ended after the whole request was written to it and before any byte
 * of a reply (a reset, the other side closing): the provider may have read the request and
 * worked on it. Retried as a connection error is (retry.ts), but a call whose last attempt ends
 * so is charged an estimate, marked as one (upstream-failure.ts), not $0: its usage cannot be known.
 */
export class UpstreamDroppedError extends Error {
  /** The provider had the whole request and may bill it (retry.ts withRetries `onMayBeBilled`). */
  readonly mayBeBilled = true;
  constructor(
    /** The socket's error message. */
    readonly reason: string,
  ) {
    super(`the upstream closed the connection after the request was sent, before a reply: ${reason}`);
    this.name = 'UpstreamDroppedError';
  }
}

const gunzipAsync = promisify(gunzip);
const inflateAsync = promisify(inflate);
const brotliAsync = promisify(brotliDecompress);
// the options read the limit at each (rare: encoded whole bodies only) decode
const zopts = () => ({ maxOutputLength: replyLimit });
const decoders: Record<string, (b: Buffer) => Promise<Buffer>> = {
  gzip: (b) => gunzipAsync(b, zopts()),
  'x-gzip': (b) => gunzipAsync(b, zopts()),
  deflate: (b) => inflateAsync(b, zopts()),
  br: (b) => brotliAsync(b, zopts()),
};
const streamDecoders: Record<string, () => NodeJS.ReadWriteStream> = { gzip: createGunzip, 'x-gzip': createGunzip, deflate: createInflate, br: createBrotliDecompress };

/**
 * The content-codings of a `content-encoding` value in the order they were applied (RFC 9110
 * §8.4: `gzip, gzip` is gzip applied twice; `identity` is none), when the gateway decodes every
 * one of them; null when there is none, or one it does not decode (the body then passes with its
 * bytes). A stack was passed on undecoded, so the gateway's key mask could not read it
 * (fresh-user finding: a key echoed in a `gzip, gzip` body reached the job).
 */
export function decodableCodings(encoding: string): string[] | null {
  const codings = encoding.split(',').map((c) => c.trim()).filter((c) => c !== '' && c !== 'identity');
  // own keys only: the header is the upstream's text (`constructor` is not a decoder)
  return codings.length > 0 && codings.every((c) => Object.hasOwn(decoders, c)) ? codings : null;
}

/** `b` with `codings` undone, the last applied first. */
async function decodeAll(b: Buffer, codings: readonly string[]): Promise<Buffer> {
  let out = b;
  for (let i = codings.length - 1; i >= 0; i--) out = out.byteLength === 0 ? out : await decoders[codings[i]!]!(out);
  return out;
}

/** What {@link upstreamRequest} sends. Header names lower case. */
export interface UpstreamInit {
  method: string;
  headers: Record<string, string>;
  body?: Uint8Array;
  signal?: CallSignal;
}

const abortError = () => new DOMException('aborted', 'AbortError');
/**
 * The `AbortError` of a request aborted before its last byte was written: `notSent: true` (the
 * provider cannot have worked on it, so the call is not charged: upstream-failure.ts).
 */
const notSentAbort = () => Object.assign(abortError(), { notSent: true as const });

/**
 * The gateway's HTTP client (undici) refused to build the upstream request, before anything was
 * sent: a header it does not send (`expect`, `upgrade`, ...; providers/anthropic.ts DROP_REQUEST
 * drops the ones known) or an argument it takes for invalid (undici `UND_ERR_INVALID_ARG`,
 * `UND_ERR_NOT_SUPPORTED`). A fault of the gateway, not of the provider: never retried
 * (`noRetry`, retry.ts) and not reported as the provider being unreachable (upstream-failure.ts).
 */
export class UpstreamRequestRefusedError extends Error {
  readonly noRetry = true;
  constructor(
    /** undici's reason, e.g. `expect header not supported` (names no value). */
    readonly reason: string,
  ) {
    super(`the gateway's HTTP client refused the upstream request: ${reason}`);
    this.name = 'UpstreamRequestRefusedError';
  }
}

/** Raw header pairs (`[name, value, ...]` as Buffers) → lower-case record; repeats joined by `, `; set-cookie dropped. */
function headerRecord(raw: Buffer[] | string[] | null): Record<string, string> {
  const out: Record<string, string> = {};
  if (!raw) return out;
  for (let i = 0; i + 1 < raw.length; i += 2) {
    // undici's own lookup: the interned lower-case name of a common header, without a copy
    // (names are tokens, ASCII, so the same as toString().toLowerCase())
    const k = undiciUtil.headerNameToString(raw[i]!);
    // (`__proto__` would set the record's prototype: no provider sends such a header)
    if (k === 'set-cookie' || k === '__proto__') continue;
    // latin1: the bytes as they came, each one a char node writes back as that byte (a UTF-8
    // value, or a byte that is no UTF-8, reaches the client unchanged; decoded as UTF-8, a
    // char past U+00FF made node's writeHead throw and took the server down)
    const v = raw[i + 1]!.toString('latin1');
    out[k] = Object.hasOwn(out, k) ? `${out[k]}, ${v}` : v;
  }
  return out;
}

/**
 * Sends one request upstream.
 * @returns the reply (headers lower case, repeated ones joined by `, `; `set-cookie` dropped):
 *   `body` read whole (decoded; an empty one stays empty whatever its content-encoding; `null`
 *   for a 204, a 304 or a HEAD request, which have none) unless the reply is
 *   `text/event-stream`, then `stream` (a PushSource; destroying it aborts the upstream
 *   request).
 * @throws when the request cannot be built ({@link UpstreamRequestRefusedError}, nothing sent),
 *   when the upstream cannot be reached, times out ({@link UpstreamTimeoutError}), resets before the reply is read whole, sends a
 *   body its content-encoding cannot decode (either of these after a 2xx's headers:
 *   {@link ReplyBrokenError}, not retried), a whole body over the size limit (raw or decoded:
 *   {@link ReplyTooLargeError}, {@link MAX_REPLY_BYTES} unless {@link setMaxReplyBytes} set
 *   another), or `signal` aborted (an `AbortError`; `notSent: true` on it when the request's
 *   last byte had not been written).
 */
export function upstreamRequest(url: string, init: UpstreamInit): Promise<Reply> {
  const target = targetOf(url);
  // undici's flat form (name, value, ...): a copy of the caller's record with two headers added
  // was ~2.5 µs of CPU a call (objects of varying keys); these two are the gateway's own
  const headers: string[] = [];
  const given = init.headers;
  for (const name in given) if (name !== 'accept-encoding' && name !== 'content-length') headers.push(name, given[name]!);
  headers.push('accept-encoding', 'gzip, deflate, br');
  if (init.body) headers.push('content-length', String(init.body.byteLength));
  const limits = timeouts;
  return new Promise<Reply>((resolve, reject) => {
    const signal = init.signal;
    if (signal?.aborted) return reject(notSentAbort());
    let abort: ((err: Error) => void) | null = null;
    let settled = false;
    let complete = false;
    // the request's last byte was written; a reply's first byte came (undici's handler hooks)
    let sent = false;
    let started = false;
    let status = 0;
    let out: Record<string, string> = {};
    let encoding = '';
    /** The reply's content-codings the gateway undoes, in the order applied ({@link decodableCodings}); null: none. */
    let codings: string[] | null = null;
    const chunks: Buffer[] = [];
    let size = 0;
    /** For SSE: what the caller reads; null for a whole body. */
    let live: PushSource | null = null;
    let resume: (() => void) | null = null;
    const onAbort = () => abort?.(sent ? abortError() : notSentAbort());
    signal?.addEventListener('abort', onAbort, { once: true });
    const done = () => signal?.removeEventListener('abort', onAbort);
    const fail = (e: Error) => {
      const code = (e as { code?: unknown }).code;
      const err =
        code === 'UND_ERR_HEADERS_TIMEOUT'
          ? new UpstreamTimeoutError('headers', limits.headersMs, 0, 0)
          : code === 'UND_ERR_BODY_TIMEOUT'
            ? new UpstreamTimeoutError('body', limits.bodyMs, status, size)
            : (code === 'UND_ERR_INVALID_ARG' || code === 'UND_ERR_NOT_SUPPORTED') && status === 0
              ? new UpstreamRequestRefusedError(e.message)
              : brokenBody(e);
      done();
      if (!settled) {
        settled = true;
        reject(err);
      } else live?.fail(err);
    };

    /**
     * `e` (not the caller's abort, not the size limit) as a {@link ReplyBrokenError} when it cut a
     * whole 2xx body after its headers, or when a reply had begun and its head could not be read
     * (status 0: a parser error, headers over undici's limit, a stray 100 Continue: the provider
     * answered, and may bill); as an {@link UpstreamDroppedError} when the connection ended
     * after the whole request was sent and before any reply.
     */
    const brokenBody = (e: Error): Error => {
      if (signal?.aborted || e instanceof ReplyTooLargeError || e.name === 'AbortError' || live) return e;
      if (status >= 200 && status < 300) return new ReplyBrokenError(status, size, e.message);
      if (status === 0 && started) return new ReplyBrokenError(0, 0, e.message);
      if (status === 0 && sent) return new UpstreamDroppedError(e.message);
      return e;
    };
    // onRequestSent: undici's Request calls it once the request's last byte is written (its types leave it out)
    const handler: Dispatcher.DispatchHandlers & { onRequestSent(): void } = {
      onConnect(a) {
        abort = a;
        if (signal?.aborted) a(notSentAbort());
      },
      onError: fail,
      onRequestSent() {
        sent = true;
      },
      onResponseStarted() {
        started = true;
      },
      onHeaders(statusCode, rawHeaders, res) {
        status = statusCode;
        out = headerRecord(rawHeaders as Buffer[] | null);
        resume = res;
        encoding = (out['content-encoding'] ?? '').toLowerCase();
        codings = encoding === '' ? null : decodableCodings(encoding);
        const decoded = codings !== null;
        if (decoded) {
          delete out['content-encoding'];
          delete out['content-length'];
        }
        if ((out['content-type'] ?? '').toLowerCase().startsWith('text/event-stream') && status !== 204 && status !== 304 && init.method !== 'HEAD') {
          // chunks go straight from onData to the reader (push-source.ts)
          const raw = new PushSource({
            resume: () => resume?.(),
            abort: (err) => {
              done();
              if (!complete) abort?.(err); // a reader that stops early ends the upstream call
            },
          });
          live = raw;
          settled = true;
          resolve({ status, headers: out, body: null, stream: decoded ? codings!.reduceRight((src, c) => decode(src, c), raw) : raw });
        }
        return true;
      },
      onData(chunk) {
        if (live) return live.push(chunk); // false: undici pauses until the reader has room (resume)
        size += chunk.byteLength;
        if (size > replyLimit) {
          abort?.(new ReplyTooLargeError(status, replyLimit, size));
          return false;
        }
        chunks.push(chunk);
        return true;
      },
      onComplete() {
        complete = true;
        done();
        if (live) return void live.end();
        if (settled) return;
        settled = true;
        if (status === 204 || status === 304 || init.method === 'HEAD') return resolve({ status, headers: out, body: null });
        const body = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
        // an empty body is empty whatever its content-encoding says (zlib refuses 0 bytes as a
        // truncated stream; a served 2xx with no body is metered as one, meter.ts)
        if (codings === null || body.byteLength === 0) return resolve({ status, headers: out, body });
        const limit = replyLimit;
        decodeAll(body, codings).then(
          (b) => resolve({ status, headers: out, body: b }),
          // zlib's maxOutputLength: the decoded body is over the limit; else it does not decode
          (e: Error & { code?: string }) => reject(e.code === 'ERR_BUFFER_TOO_LARGE' ? new ReplyTooLargeError(status, limit, limit + 1) : brokenBody(new Error(`its ${encoding} body does not decode: ${e.message}`))),
        );
      },
    };
    try {
      target.pool.dispatch(
        {
          origin: target.origin,
          path: target.path,
          method: init.method as Dispatcher.HttpMethod,
          headers,
          body: init.body ? Buffer.from(init.body.buffer, init.body.byteOffset, init.body.byteLength) : null,
          headersTimeout: limits.headersMs,
          bodyTimeout: limits.bodyMs,
        },
        handler,
      );
    } catch (e) {
      fail(e as Error);
    }
  });
}

/**
 * `raw` decoded by the content-encoding's decoder, as another {@link PushSource}: `raw`'s chunks
 * are written into the decoder (paused while it is full), its output pushed to the reader
 * (pausing the decoder while the reader is full). When `raw` breaks (the upstream cut the
 * connection), what arrived before is still decoded and handed over, then `raw`'s error (a node
 * pipe, and zlib's own "unexpected end of file", dropped what waited in between: a cut gzip
 * stream lost most of what had arrived). A reader that stops early destroys the decoder and
 * `raw`, which aborts the upstream. A body that does not decode fails with the decoder's error.
 */
function decode(raw: PushSource, encoding: string): PushSource {
  const d = streamDecoders[encoding]!() as unknown as Transform & { flush(cb: () => void): void };
  const out = new PushSource({
    resume: () => d.resume(),
    abort: () => {
      d.destroy();
      raw.destroy();
    },
  });
  raw.attach({
    data: (c) => d.write(c),
    end: () => d.end(),
    error: (e) =>
      d.flush(() => {
        // everything written is decoded: what the decoder holds goes to the reader ('data'), then the error
        while (d.read() !== null);
        out.fail(e);
        d.destroy();
      }),
    close: () => d.destroy(),
  });
  d.on('drain', () => raw.resume());
  d.on('data', (c: Buffer) => {
    if (!out.push(c)) d.pause();
  });
  d.on('end', () => out.end());
  d.on('error', (e) => out.fail(e));
  return out;
}
