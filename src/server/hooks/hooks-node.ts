import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ApiErrorBody } from '../../protocol/index.js';
import type { ServerContext } from '../context.js';
import { replyBeforeBody } from '../../core/linger.js';
import { MAX_HOOK_BODY_BYTES, receiveDelivery, type HookReply } from './receive.js';

/** `/hooks/<provider>/<receiver>` with an optional query string; the two parts captured. */
const HOOK_PATH = /^\/hooks\/([^/?]+)\/([^/?]+)(?:\?.*)?$/;
/** A percent-encoded NUL anywhere in the URL (path or query), as the API's check in app.ts. */
const NUL = /%00/;

/**
 * The webhook endpoints on plain node:http, past Hono's Request objects and web streams (issue
 * 7 throughput, as the gateway's /v1/* calls: server.ts). Serves `POST
 * /hooks/<provider>/<receiver>` (another method there: 405 with `Allow: POST`; a URL holding
 * `%00`: 400 `invalid_request`, as the API answers) and returns true; returns false at once for any other path (the Hono app serves it).
 * The body is read into memory up to {@link MAX_HOOK_BODY_BYTES}: a larger declared
 * Content-Length, or more bytes than that, gets 413 `payload_too_large` at once, and the rest
 * is read and dropped, never kept, before the reply ends (core/linger.ts endAfterBody: closing
 * with it unread, as a client's `Connection: close` has node do, reset the connection before
 * the client read the 413). Then receive.ts decides; its reply is written
 * as JSON. An error thrown there is logged and answered 500 `internal`, as the API does.
 */
export function serveHook(ctx: ServerContext, req: IncomingMessage, res: ServerResponse): boolean {
  const m = HOOK_PATH.exec(req.url ?? '');
  if (!m) return false;
  if (req.method !== 'POST') {
    // A webhook URL opened in a browser: say what it is for (RFC 9110 §15.5.6: 405 with Allow).
    req.resume();
    const body = JSON.stringify(error('method_not_allowed', `${req.method ?? 'this method'} is not served here: webhook endpoints take POST deliveries`));
    res.writeHead(405, { allow: 'POST', 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
    res.end(body);
    return true;
  }
  if (NUL.test(req.url ?? '')) {
    // As the API answers (app.ts): a NUL would reach PostgreSQL text, which cannot hold it (a
    // 500 there, a 404 on SQLite); refused before any store query, the body read and dropped.
    req.resume();
    send(res, { status: 400, body: error('invalid_request', 'the URL must not contain NUL (%00)') });
    return true;
  }
  read(ctx, req, res, m[1]!, m[2]!);
  return true;
}

/** Reads the body (413 past the limit), then answers what receive.ts decides. */
function read(ctx: ServerContext, req: IncomingMessage, res: ServerResponse, providerPart: string, receiverPart: string): void {
  let provider: string;
  let receiver: string;
  try {
    provider = decodeURIComponent(providerPart);
    receiver = decodeURIComponent(receiverPart);
  } catch {
    return send(res, { status: 404, body: error('not_found', `no route POST ${req.url ?? ''}`) });
  }
  if (Number(req.headers['content-length'] ?? 0) > MAX_HOOK_BODY_BYTES) return tooLarge(req, res);
  const chunks: Buffer[] = [];
  let size = 0;
  let refused = false;
  req.on('data', (c: Buffer) => {
    if (refused) return;
    size += c.byteLength;
    if (size > MAX_HOOK_BODY_BYTES) {
      refused = true;
      chunks.length = 0;
      return tooLarge(req, res);
    }
    chunks.push(c);
  });
  req.on('end', () => {
    if (refused) return;
    const headers: Record<string, string> = {};
    const given = req.headers;
    for (const k in given) {
      const v = given[k];
      if (v !== undefined) headers[k] = typeof v === 'string' ? v : v.join(', ');
    }
    const raw = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
    receiveDelivery(ctx, { provider, receiver, headers, raw }).then(
      (reply) => send(res, reply),
      (err: unknown) => {
        ctx.log.error('request failed', { method: 'POST', path: `/hooks/${provider}/${receiver}`, err: String(err) });
        send(res, { status: 500, body: error('internal', 'internal error (see the server log)') });
      },
    );
  });
}

function error(code: string, message: string): ApiErrorBody {
  return { error: { code, message } };
}

/** 413 at once; the rest of the body read and dropped before the end (core/linger.ts: closing with it unread reset the connection before a client still sending read the 413). */
function tooLarge(req: IncomingMessage, res: ServerResponse): void {
  replyBeforeBody(req, res, 413, JSON.stringify(error('payload_too_large', `webhook body is larger than ${MAX_HOOK_BODY_BYTES} bytes`)));
}

/** Writes `reply` as JSON with its length (once). */
function send(res: ServerResponse, reply: HookReply): void {
  if (res.headersSent) return;
  const body = JSON.stringify(reply.body);
  res.writeHead(reply.status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
  res.end(body);
}
