import type { IncomingMessage, ServerResponse } from 'node:http';

/**
 * How long a connection whose request body was left unread stays open after its reply has gone
 * out, reading and dropping the rest of that body, at most (ms): {@link endAfterBody}.
 */
export const LINGER_MS = 5_000;

/**
 * Ends `res`, whose bytes are written already (its head with a content-length, and its body),
 * for a request answered before its body was read — a lingering close, as nginx's
 * `lingering_close` does it: the reply ends (and a connection that closes after it closes) once
 * the rest of the body has arrived, read and dropped, never kept; or after {@link LINGER_MS}; or
 * at once when none is coming (`noBodyComing`: e.g. `Expect: 100-continue` never answered with
 * 100; or the request is complete, or gone). Closing a socket with bytes unread makes the kernel
 * reset the connection, and a client still sending its body lost the reply to EPIPE or
 * ECONNRESET (a fresh tester: a third of fetch() uploads of 33 MiB never saw their 413).
 */
export function endAfterBody(req: IncomingMessage, res: ServerResponse, noBodyComing = false): void {
  if (noBodyComing || noBodyComes.has(req) || req.complete || req.destroyed) return void res.end();
  const done = () => {
    clearTimeout(timer);
    if (!res.writableEnded && !res.destroyed) res.end();
  };
  // the body still coming after LINGER_MS: the reply ends and the connection closes, whatever
  // the reply's headers said of it (node would otherwise read a keep-alive connection's body to
  // its end: a fresh tester held one open for minutes, trickling bytes)
  const timer = setTimeout(() => {
    done();
    if (!req.complete) res.once('finish', () => req.socket?.destroy());
  }, LINGER_MS);
  timer.unref();
  req.once('end', done);
  req.once('error', done);
  res.once('close', () => clearTimeout(timer));
  // whoever read the body before (a web stream over it that was abandoned, as Hono's bodyLimit
  // leaves one) would pause it again when its own queue fills: the rest is only dropped now
  for (const l of req.listeners('data')) req.off('data', l as (...a: unknown[]) => void);
  req.on('data', drop);
  req.resume();
}

/** Drops a chunk of a body no one reads any more. */
const drop = (): void => undefined;

/** Requests whose client waits for a `100 Continue` that will not be sent (see {@link noBodyWillCome}). */
const noBodyComes = new WeakSet<IncomingMessage>();

/**
 * Marks `req`, sent with `Expect: 100-continue`, as one whose 100 Continue will not be sent (its
 * reply is decided from the headers: a declared size over the limit): its client sends no body,
 * so {@link endAfterBody} ends the reply at once instead of waiting for one (RFC 9110 §10.1.1).
 */
export function noBodyWillCome(req: IncomingMessage): void {
  noBodyComes.add(req);
}

/**
 * Answers `req` with `status` and the JSON text `body` before (or without) reading its body:
 * head (`connection: close`) and body written at once, the end after the body
 * ({@link endAfterBody}).
 */
export function replyBeforeBody(req: IncomingMessage, res: ServerResponse, status: number, body: string, headers: Record<string, string> = {}): void {
  if (res.headersSent) return;
  // the connection closes after it (node would keep it and read the body to its end)
  res.writeHead(status, { ...headers, 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)), connection: 'close' });
  res.write(body);
  endAfterBody(req, res);
}

/**
 * For a handler that may answer before it has read the request's body, and that ends its
 * replies itself (the Hono app: its bodyLimit's 413 on a chunked body past the limit, a 401
 * before any body is read): `res.end` of this reply writes what it is given and then ends as
 * {@link endAfterBody} does while the body is still coming; as it was once the body is in.
 * A callback given to `end` runs when the reply finishes. Changes only this `res`.
 */
export function lingerOnEnd(req: IncomingMessage, res: ServerResponse): void {
  const end = res.end;
  res.end = function (this: ServerResponse, ...args: unknown[]) {
    res.end = end;
    if (req.complete || req.destroyed) return (end as (...a: unknown[]) => ServerResponse).apply(this, args);
    const cb = args.find((a) => typeof a === 'function') as (() => void) | undefined;
    if (cb) res.once('finish', cb);
    const [chunk, encoding] = args;
    if (chunk !== undefined && chunk !== null && typeof chunk !== 'function') res.write(chunk as string | Uint8Array, (typeof encoding === 'string' ? encoding : 'utf8') as BufferEncoding);
    endAfterBody(req, res);
    return res;
  } as ServerResponse['end'];
}
