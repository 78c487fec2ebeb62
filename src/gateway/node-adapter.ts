import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from '../core/log.js';
import { ChunkStream } from './chunk-stream.js';
import type { CallSignal, GatewayRequest, Reply } from './reply.js';

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

/**
 * Serves the gateway on plain node:http (no Request/Response objects, no web streams): the
 * body is read into a Buffer (bytes past `limit` are counted, not kept: the handler answers
 * 413), the handler's reply is written with one `writeHead` + `end`, or for a stream chunk by
 * chunk as they arrive (honouring backpressure). When the client goes away before the reply
 * is done, the request's signal aborts (the upstream call with it) and the stream is closed.
 * A handler that throws gets a 500 `api_error` (message logged, not sent).
 */
export function nodeHandler(handle: (req: GatewayRequest) => Promise<Reply>, limit: number, log: Logger): (req: IncomingMessage, res: ServerResponse) => void {
  return (req, res) => {
    const ac = new ClientSignal();
    res.on('close', () => {
      if (!res.writableFinished) ac.abort();
    });
    const chunks: Buffer[] = [];
    let kept = 0;
    let total = 0;
    req.on('data', (c: Buffer) => {
      total += c.byteLength;
      if (kept >= limit) return;
      const part = kept + c.byteLength > limit ? c.subarray(0, limit - kept) : c;
      chunks.push(part);
      kept += part.byteLength;
    });
    req.on('error', () => ac.abort());
    req.on('end', () => {
      const url = req.url ?? '/';
      const q = url.indexOf('?');
      const request: GatewayRequest = {
        method: req.method ?? 'GET',
        path: q === -1 ? url : url.slice(0, q),
        pathAndQuery: url,
        headers: req.headers,
        body: chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks),
        bodyBytes: total,
        signal: ac,
      };
      handle(request).then(
        (reply) => writeReply(res, reply),
        (err: unknown) => {
          log.error('gateway: request failed', { path: request.path, error: (err as Error).message });
          if (res.headersSent) return void res.destroy();
          const body = JSON.stringify({ type: 'error', error: { type: 'api_error', message: 'internal error in the gateway' } });
          res.writeHead(500, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) }).end(body);
        },
      );
    });
  };
}

/**
 * Writes a reply: whole body with its content-length, or the stream pushed chunk by chunk
 * (chunk-stream.ts: each upstream chunk goes from the source's 'data' event through the
 * metering and masking steps into `res.write` in the same tick; the source pauses while `res`
 * is full and resumes on 'drain'). The headers go out with the first chunk (one write) when
 * one is already waiting, else at once (a model may think before its first event). A client
 * that goes away destroys the source, which aborts the upstream; the call is still recorded
 * (meter.ts, the stream's finish hook). A broken upstream cuts the response unfinished.
 */
function writeReply(res: ServerResponse, reply: Reply): void {
  if (!reply.stream) {
    const headers = { ...reply.headers, 'content-length': String(reply.body?.byteLength ?? 0) };
    res.writeHead(reply.status, headers);
    res.end(reply.body ?? undefined);
    return;
  }
  const headers = { ...reply.headers };
  delete headers['content-length'];
  res.writeHead(reply.status, headers);
  const stream = ChunkStream.from(reply.stream);
  if (!stream.buffered) res.flushHeaders();
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
}
