import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from '../core/log.js';
import type { GatewayRequest, Reply } from './reply.js';

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
    const ac = new AbortController();
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
        signal: ac.signal,
      };
      handle(request).then(
        (reply) => writeReply(res, reply, ac.signal),
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

/** Writes a reply: whole body with its content-length, or the stream chunk by chunk. */
function writeReply(res: ServerResponse, reply: Reply, signal: AbortSignal): void {
  if (!reply.stream) {
    const headers = { ...reply.headers, 'content-length': String(reply.body?.byteLength ?? 0) };
    res.writeHead(reply.status, headers);
    res.end(reply.body ?? undefined);
    return;
  }
  const headers = { ...reply.headers };
  delete headers['content-length'];
  res.writeHead(reply.status, headers);
  res.flushHeaders();
  const it = reply.stream[Symbol.asyncIterator]();
  const closed = new Promise<void>((r) => res.once('close', r));
  void (async () => {
    try {
      for (;;) {
        const n = await it.next();
        if (n.done) break;
        if (res.destroyed) break;
        if (!res.write(n.value)) await Promise.race([new Promise<void>((r) => res.once('drain', r)), closed]);
      }
    } catch {
      // upstream broke (already metered): cut the response so the client sees it unfinished
      return void res.destroy();
    }
    if (res.destroyed || signal.aborted) {
      await it.return?.(undefined).catch(() => undefined);
      return;
    }
    res.end();
  })();
}
