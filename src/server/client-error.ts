import http from 'node:http';
import type { Duplex } from 'node:stream';

/**
 * What the control plane answers a request that node's HTTP parser refused before any handler
 * saw it (the server's `clientError` event): node's own answer is a bare status line with no
 * body (a fresh user's 20,000-character header got `431` and nothing saying why). Ours names the
 * problem in a JSON body that both wire formats' clients read: Anthropic's error shape
 * (`{"type":"error","error":{"type","message"}}`, docs.anthropic.com/en/api/errors) with
 * OpenAI's `param` and `code` beside them (platform.openai.com/docs/guides/error-codes), since
 * the path, and so the wire format, is not known yet. Statuses are node's (RFC 9110 §15.5.9 408,
 * RFC 6585 §5 431, else 400), the connection closes after it, and a socket that cannot take it
 * any more (reset by the peer) is only destroyed. A reply to an earlier request on the same
 * connection (pipelined, RFC 9112 §9.3.2) is written whole first. `maxHeaderBytes`: the limit the
 * 431 names (node's, `--max-http-header-size`, 16 KiB by default).
 */
export function answerClientError(err: NodeJS.ErrnoException & { reason?: string }, socket: Duplex, maxHeaderBytes = http.maxHeaderSize): void {
  if (err.code === 'ECONNRESET' || !socket.writable) {
    socket.destroy();
    return;
  }
  // A request before it on the same connection (pipelined) still being answered: its reply goes
  // out first, then this one (answered at once, the earlier reply was lost: fresh-user finding,
  // a POST's one-time token among them). Its 'finish' fires once it is all written.
  const earlier = (socket as { _httpMessage?: http.ServerResponse })._httpMessage;
  // ...unless it is the reply of the request the error is in: its body not whole yet (the parser
  // is still on it), its handler waits for a body that will never come whole — one that stalled
  // past the request timeout (a model call after a valid token: still open after 420 s), or
  // whose chunked framing broke (`ZZZ` as a chunk size: a 408 five minutes later; fresh-tester
  // findings). Answered in its place, at once.
  if (earlier && !earlier.req.complete) {
    if (earlier.headersSent) return void socket.destroy();
    const [status, code, message] = clientErrorReply(err, maxHeaderBytes);
    const body = errorBody(code, message);
    earlier.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), connection: 'close' });
    // node's own end, not a lingering one (core/linger.ts lingerOnEnd) that would wait up to 5 s
    // for the rest of a body the parser will never read; the connection then closes at once
    (http.ServerResponse.prototype.end as (chunk: string, cb: () => void) => http.ServerResponse).call(earlier, body, () => void socket.destroy());
    return;
  }
  if (earlier && !earlier.writableFinished) {
    earlier.once('finish', () => answerClientError(err, socket, maxHeaderBytes));
    earlier.once('close', () => earlier.writableFinished || socket.destroy());
    return;
  }
  const [status, code, message] = clientErrorReply(err, maxHeaderBytes);
  const body = errorBody(code, message);
  socket.end(`HTTP/1.1 ${status} ${http.STATUS_CODES[status]}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
}

/** The JSON both wire formats' clients read: Anthropic's error shape with OpenAI's `param` and `code`. */
function errorBody(code: string, message: string): string {
  return JSON.stringify({ type: 'error', error: { type: 'invalid_request_error', message, param: null, code } });
}

/** `[status, code, message]` for a parser error (`err.code`: node's `HPE_*` names from llhttp, or ERR_HTTP_REQUEST_TIMEOUT). */
function clientErrorReply(err: NodeJS.ErrnoException & { reason?: string }, maxHeaderBytes: number): [number, string, string] {
  if (err.code === 'HPE_HEADER_OVERFLOW') return [431, 'request_header_fields_too_large', `the request's headers are over ${maxHeaderBytes} bytes, this server's limit`];
  if (err.code === 'ERR_HTTP_REQUEST_TIMEOUT') return [408, 'request_timeout', 'the request did not arrive whole in time'];
  // llhttp's reason ("Invalid header value char"), not the stack or the bytes it choked on
  const reason = typeof err.reason === 'string' && err.reason !== '' ? err.reason : 'malformed HTTP request';
  return [400, 'malformed_http_request', `the request is not valid HTTP/1.1: ${reason}`];
}

/**
 * The same JSON answer for a request the parser read but that has no `Host` header (RFC 9112
 * §3.2: a server must answer 400 to an HTTP/1.1 request without one); node's own check
 * (`requireHostHeader`) answers a bare 400 with no body, so the server turns it off and asks
 * this first. HTTP/1.0 requests without one are refused as node refused them.
 * @returns true when it answered (the request goes no further).
 */
export function refuseWithoutHost(req: http.IncomingMessage, res: http.ServerResponse): boolean {
  if (req.headers.host !== undefined) return false;
  const body = errorBody('missing_host_header', 'the request has no Host header (HTTP/1.1 requires one)');
  res.writeHead(400, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), connection: 'close' }).end(body);
  return true;
}
