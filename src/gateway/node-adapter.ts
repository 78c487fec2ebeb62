import { validateHeaderName, validateHeaderValue, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Logger } from '../core/log.js';
import { decodeBody, decodedHeaders, encodingsOf, type DecodedBody } from './body-encoding.js';
import type { CallAuth, PreAuthedRequest } from './call-auth.js';
import { bodyRefusalFor, type BodyRefusal, type RefusedBodyRequest } from './body-refusal.js';
import type { JobAuth } from './job-auth.js';
import { ChunkStream } from './chunk-stream.js';
import { endAfterBody } from '../core/linger.js';
import { internalError } from './errors.js';
import type { CallSignal, GatewayRequest, Reply } from './reply.js';
import { withoutTokenParams } from './query-tokens.js';

/**
 * The request's {@link CallSignal}: aborted by {@link ClientSignal.abort} when the client goes
 * away. Listeners run once, in the order added, as an AbortSignal's do (one that throws does
 * not stop the others; its error is thrown on the next tick, as EventTarget reports it).
 */
class ClientSignal implements CallSignal {
  aborted = false;
  private listeners: Array<() => void> | null = null;

  addEventListener(_type: 'abort', listener: () => void): void {
    if (this.aborted) return;
    const l = (this.listeners ??= []);
    if (!l.includes(listener)) l.push(listener);
  }

  removeEventListener(_type: 'abort', listener: () => void): void {
    const l = this.listeners;
    if (!l) return;
    const i = l.indexOf(listener);
    if (i >= 0) l.splice(i, 1);
  }

  abort(): void {
    if (this.aborted) return;
    this.aborted = true;
    const l = this.listeners;
    this.listeners = null;
    if (!l) return;
    for (const fn of l) {
      try {
        fn();
      } catch (err) {
        process.nextTick(() => {
          throw err;
        });
      }
    }
  }
}

const EMPTY = Buffer.alloc(0);

/**
 * Serves the gateway on plain node:http (no Request/Response objects, no web streams). Before
 * any of the body is read, `auth` ({@link CallAuth.preflight}) looks the call's job token up
 * (once: the handler gets it as `auth` on the request, {@link PreAuthedRequest}); the body is not
 * kept at all — the handler answers from the headers, with `connection: close`, and the rest of
 * the body is read and dropped for at most 5 s (core/linger.ts) before the connection closes, so a
 * client still sending gets the reply, not a reset — when the request is not a model call (404), its token is
 * missing or unknown (401), or its `content-length` is over `limit` (413). Otherwise the body is
 * read into a Buffer (once past `limit`, the handler answers 413 at once, `bodyCut` set, and the
 * rest is dropped as a refused body's is) and,
 * when sent with a `content-encoding`, decoded ({@link decodeBody}: gzip, deflate, br; decoded
 * size bounded by `limit`, past it 413; an unknown encoding 415, naming it; undecodable 400 —
 * the route answers each in its wire format and records it as refused: the request reaches it
 * with an empty body and `bodyRefusal` set, body-refusal.ts). The handler's reply is written with one
 * `writeHead` + `end`, or for a stream chunk by chunk as they arrive (honouring backpressure).
 * When the client goes away before the reply is done, the request's signal aborts (the upstream
 * call with it) and the stream is closed. A handler that throws gets a 500 in the path's wire format (errors.ts internalError; message
 * logged, not sent). Without `auth`, every body is read first (as before preflight existed).
 */
export function nodeHandler(handle: (req: GatewayRequest) => Promise<Reply>, limit: number, log: Logger, auth?: CallAuth): NodeHandler {
  const replies = new OpenReplies();
  const handler = (req: IncomingMessage, res: ServerResponse): void => {
    const ac = new ClientSignal();
    res.on('close', () => {
      if (!res.writableFinished) ac.abort();
    });
    req.on('error', () => ac.abort());
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    const call: Call = { req, res, ac, path: q === -1 ? url : url.slice(0, q), url, handle, limit, log, replies };
    const pre = auth ? auth.preflight(req.method, call.path, req.headers) : undefined;
    if (pre instanceof Promise) {
      pre
        .then(
          (found) => admit(call, found, true),
          (err: unknown) => fail(res, log, call.path, err),
        )
        .catch(lastResort(call));
    } else admit(call, pre ?? undefined, pre !== undefined);
  };
  return Object.assign(handler, { untilRepliesWritten: (ms: number) => replies.untilNone(ms) });
}

/**
 * The node:http handler of {@link nodeHandler}, and `untilRepliesWritten(ms)`: resolves true once
 * no streamed reply is being written (each one's last chunk is out, or its client is gone), false
 * after `ms`. A stopping server waits for it after the calls have settled (gateway.ts drain): a
 * stream's call is settled just before its last chunk goes out, and closing the connections
 * then cut that chunk off (a fresh tester's stream ending as the server stopped: curl exit 18,
 * the call charged in full).
 */
export type NodeHandler = ((req: IncomingMessage, res: ServerResponse) => void) & { untilRepliesWritten(ms: number): Promise<boolean> };

/** Streamed replies being written by one {@link nodeHandler}: a counter, and who waits for it to reach 0. */
class OpenReplies {
  private open = 0;
  private idle: Array<() => void> = [];
  opened(): void {
    this.open++;
  }
  closed(): void {
    if (--this.open > 0) return;
    for (const wake of this.idle.splice(0)) wake();
  }
  untilNone(ms: number): Promise<boolean> {
    if (this.open === 0) return Promise.resolve(true);
    return new Promise((resolve) => {
      const wake = () => {
        clearTimeout(timer);
        resolve(true);
      };
      const timer = setTimeout(() => {
        this.idle = this.idle.filter((w) => w !== wake);
        resolve(false);
      }, ms);
      timer.unref();
      this.idle.push(wake);
    });
  }
}

// Requests sent with `Expect: 100-continue` whose 100 Continue is not sent yet (expectContinue).
const awaitingContinue = new WeakSet<IncomingMessage>();

/**
 * Marks `req` (sent with `Expect: 100-continue`, handed to the server's `checkContinue`
 * listener, so node sent no 100 Continue itself) for {@link nodeHandler}: it sends the 100
 * Continue only when it is about to read the body, never before a refusal it makes from the
 * headers alone (unknown token 401, declared size over the limit 413, not a model call 404) —
 * node's own sent it at once, inviting the client to upload 100 MB that was then refused
 * (tester finding). RFC 9110 §10.1.1: a server may answer with the final status instead.
 */
export function expectContinue(req: IncomingMessage): void {
  awaitingContinue.add(req);
}

/** One request being served by {@link nodeHandler}. */
interface Call {
  req: IncomingMessage;
  res: ServerResponse;
  ac: ClientSignal;
  path: string;
  url: string;
  handle: (req: GatewayRequest) => Promise<Reply>;
  limit: number;
  log: Logger;
  replies: OpenReplies;
}

/**
 * Serves `c` once its job auth is known (`checked`: the preflight ran; `found` undefined then
 * means not a model call): the body is read only for a model call of a known job that declared
 * no size over the limit (or when no preflight ran).
 */
function admit(c: Call, found: JobAuth | undefined, checked: boolean): void {
  const { req, limit } = c;
  const declared = Number(req.headers['content-length'] ?? 0);
  if (checked && (found === undefined || declared > limit || !('job' in found || 'pausedForBudget' in found))) {
    const unread = declared > 0 || req.headers['transfer-encoding'] !== undefined;
    return serve(c, EMPTY, declared || 0, req.headers, found, unread);
  }
  // `Expect: 100-continue`: the client waits for this before it sends the body (RFC 9110 §10.1.1)
  if (awaitingContinue.delete(req)) c.res.writeContinue();
  const chunks: Buffer[] = [];
  let total = 0;
  let refused = false;
  req.on('data', (b: Buffer) => {
    if (refused) return;
    total += b.byteLength;
    if (total > limit) {
      // past the limit (a chunked body, or one longer than it declared): the 413 at once, the
      // rest dropped for a while before the close (it read a 600 MiB upload to its end before
      // answering: a fresh tester)
      refused = true;
      chunks.length = 0;
      return serve(c, EMPTY, total, req.headers, found, true, undefined, true);
    }
    chunks.push(b);
  });
  req.on('end', () => {
    if (refused) return;
    const body = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
    const enc = req.headers['content-encoding'];
    if (enc === undefined) return serve(c, body, total, req.headers, found, false);
    const encodings = encodingsOf(enc);
    if (encodings.length === 0) return serve(c, body, total, req.headers, found, false);
    decodeBody(encodings, body, limit)
      .then(
        (d) => decoded(c, d, enc, found, total),
        (err: unknown) => fail(c.res, c.log, c.path, err),
      )
      .catch(lastResort(c));
  });
}

/**
 * Serves a body sent with `content-encoding` `enc` once {@link decodeBody} is done. A body it
 * could not decode reaches the handler empty with its {@link BodyRefusal} attached (body-refusal.ts):
 * the route answers it (in its wire format) and records it as refused, as it does a body too large.
 */
function decoded(c: Call, d: DecodedBody, enc: string | string[], found: JobAuth | undefined, received: number): void {
  if ('body' in d) return serve(c, d.body, d.body.byteLength, decodedHeaders(c.req.headers), found, false);
  serve(c, EMPTY, received, c.req.headers, found, false, bodyRefusalFor(d, enc, c.limit) ?? undefined);
}

/**
 * Hands the request to the gateway and writes its reply (`close`: the body was left unread, or
 * its rest; `refusal`: why its body could not be decoded; `cut`: it went past the limit before
 * its end, `bodyBytes` being what had arrived).
 */
function serve(c: Call, body: Buffer, bodyBytes: number, headers: IncomingHttpHeaders, found: JobAuth | undefined, close: boolean, refusal?: BodyRefusal, cut = false): void {
  const request: PreAuthedRequest & RefusedBodyRequest = { method: c.req.method ?? 'GET', path: c.path, pathAndQuery: withoutTokenParams(c.url), headers, body, bodyBytes, signal: c.ac, auth: found };
  if (refusal) request.bodyRefusal = refusal;
  if (cut) request.bodyCut = true;
  c.handle(request)
    .then(
      (reply) => writeReply(c.res, reply, close ? c.req : null, c.log, c.replies),
      (err: unknown) => fail(c.res, c.log, c.path, err),
    )
    .catch(lastResort(c));
}

/**
 * What ends a request whose handling threw past every other handler (a reply that cannot be
 * written: the call is metered already, meter.ts): its connection is closed and the error
 * logged — never an unhandled rejection, which would end the whole control plane.
 */
function lastResort(c: Call): (err: unknown) => void {
  return (err) => {
    c.log.error('gateway: could not write the reply', { path: c.path, error: (err as Error).message });
    c.res.destroy();
  };
}

/** A failed handler (or token lookup): 500 in the path's wire format (errors.ts internalError), its message logged, not sent. */
function fail(res: ServerResponse, log: Logger, path: string, err: unknown): void {
  log.error('gateway: request failed', { path, error: (err as Error).message });
  if (res.headersSent) return void res.destroy();
  const reply = internalError(path);
  res.writeHead(reply.status, { ...reply.headers, 'content-length': String(reply.body?.byteLength ?? 0) }).end(reply.body);
}

/**
 * Writes a reply: whole body with its content-length, or the stream pushed chunk by chunk
 * (chunk-stream.ts: each upstream chunk goes from the source's 'data' event through the
 * metering and masking steps into `res.write` in the same tick; the source pauses while `res`
 * is full and resumes on 'drain'). The headers go out with the first chunk (one write) when
 * one is already waiting, else at once (a model may think before its first event). A client
 * that goes away destroys the source, which aborts the upstream; the call is still recorded
 * (meter.ts, the stream's finish hook). A broken upstream cuts the response unfinished.
 * `unread`: the request, when its body was left unread (a refusal from the headers alone): the
 * connection closes after the reply, once that body is in (core/linger.ts endAfterBody).
 * A stream counts in `replies` until `res` closes.
 */
function writeReply(res: ServerResponse, reply: Reply, unread: IncomingMessage | null, log: Logger, replies: OpenReplies): void {
  const close = unread !== null;
  if (!reply.stream) {
    // RFC 9110 §8.6: no Content-Length on a 204 (nor a 304's, which would describe another body)
    const length = reply.status === 204 || reply.status === 304 ? null : (reply.body?.byteLength ?? 0);
    writeHead(res, reply.status, flatHeaders(reply.headers, close, length), log);
    if (unread === null) return void res.end(reply.body ?? undefined);
    if (reply.body?.byteLength) res.write(reply.body);
    // the end (and the close) once the unread body is in, or 5 s (a client still sending got a reset, not the reply)
    endAfterBody(unread, res, awaitingContinue.has(unread));
    return;
  }
  const headers = flatHeaders(reply.headers, close, null);
  const stream = ChunkStream.from(reply.stream);
  try {
    writeHead(res, reply.status, headers, log);
  } catch (err) {
    stream.destroy(); // its finish hook records the call (meter.ts), the upstream is aborted
    throw err;
  }
  // the headers now (a model may think before its first event): an empty write sends them as
  // latin1, byte for byte; flushHeaders() writes them as UTF-8 (node 20's _send('')), which
  // mangled an upstream header's bytes past ASCII (fresh-user finding)
  if (!stream.buffered) res.write(EMPTY);
  const control = stream.pushTo({
    write: (chunk) => res.destroyed || res.write(chunk),
    end: () => {
      if (!res.destroyed) res.end();
    },
    fail: () => {
      res.destroy();
    },
  });
  res.on('drain', control.resume);
  res.once('close', control.cancel);
  // written until its last chunk is out or its client is gone (a stopping server waits: NodeHandler)
  replies.opened();
  res.once('close', () => replies.closed());
}

/**
 * A reply's headers in node's flat form (`[name, value, ...]`: not a copy of the record with
 * headers added, ~1 µs a call), with `content-length` `length` (null: none, a stream is
 * chunked), and `connection: close` when `close` (an unread request body: the socket closes
 * after the reply, once that body is in, core/linger.ts endAfterBody).
 */
function flatHeaders(given: Record<string, string>, close: boolean, length: number | null): string[] {
  const headers: string[] = [];
  for (const name in given) if (name !== 'content-length' && name !== 'connection') headers.push(name, given[name]!);
  if (length !== null) headers.push('content-length', String(length));
  if (close) headers.push('connection', 'close');
  else if (given['connection'] !== undefined) headers.push('connection', given['connection']);
  return headers;
}

/**
 * `res.writeHead(status, headers)` (flat `[name, value, ...]`); when node refuses a header
 * (a name that is no token, a value with a control character: upstream text, RFC 9110 §5.5),
 * the reply goes out without those, and the names dropped are logged.
 */
function writeHead(res: ServerResponse, status: number, headers: string[], log: Logger): void {
  try {
    res.writeHead(status, headers);
    return;
  } catch (err) {
    const code = (err as { code?: string }).code;
    if (code !== 'ERR_INVALID_CHAR' && code !== 'ERR_INVALID_HTTP_TOKEN') throw err;
  }
  const kept: string[] = [];
  const dropped: string[] = [];
  for (let i = 0; i + 1 < headers.length; i += 2) {
    try {
      validateHeaderName(headers[i]!);
      validateHeaderValue(headers[i]!, headers[i + 1]!);
      kept.push(headers[i]!, headers[i + 1]!);
    } catch {
      dropped.push(JSON.stringify(headers[i]!.slice(0, 100)));
    }
  }
  log.warn('gateway: reply headers node cannot send were dropped', { headers: dropped.join(', ') });
  res.writeHead(status, kept);
}
