import type { IncomingMessage, Server } from 'node:http';
import type { Duplex } from 'node:stream';

/** Request headers that ask for an upgrade: left out when it is ignored (RFC 9110 §7.8; RFC 7540 §3.2 for HTTP2-Settings). */
const UPGRADE_HEADERS = new Set(['upgrade', 'http2-settings']);

/**
 * Serves a request that asked for a protocol upgrade this server does not offer — anything but
 * the runners' WebSocket (`/api/runners/connect`, hub.ts): `Upgrade: h2c` with `HTTP2-Settings`,
 * which the JDK's default HttpClient sends on every plain-http request; a WebSocket to `/v1/…` —
 * as if it had not asked, as RFC 9110 §7.8 lets a server ("a server MAY ignore a received
 * Upgrade header field"). It got a bare 404 and nothing reached the gateway (fresh-tester
 * finding). node handed the socket over with the request's head parsed (`req`) and the bytes
 * read past it (`head`): the head is written again from what node parsed (`rawHeaders`, so
 * framing is what the parser understood), without `Upgrade`, `HTTP2-Settings` and the
 * `Connection` tokens naming them, put back in front of those bytes, and the socket handed to
 * `server` as a new connection: its parser serves this request and any later one on it as
 * every other (the gateway, the API, node's own errors).
 */
export function serveIgnoringUpgrade(server: Server, req: IncomingMessage, socket: Duplex, head: Buffer): void {
  const lines = [`${req.method ?? 'GET'} ${req.url ?? '/'} HTTP/${req.httpVersion === '1.0' ? '1.0' : '1.1'}`];
  const raw = req.rawHeaders;
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = raw[i]!;
    const lower = name.toLowerCase();
    if (UPGRADE_HEADERS.has(lower)) continue;
    if (lower === 'connection') {
      const kept = raw[i + 1]!.split(',').map((t) => t.trim()).filter((t) => t !== '' && !UPGRADE_HEADERS.has(t.toLowerCase()));
      if (kept.length > 0) lines.push(`${name}: ${kept.join(', ')}`);
      continue;
    }
    lines.push(`${name}: ${raw[i + 1]!}`);
  }
  socket.unshift(Buffer.concat([Buffer.from(`${lines.join('\r\n')}\r\n\r\n`, 'latin1'), head]));
  server.emit('connection', socket);
}
