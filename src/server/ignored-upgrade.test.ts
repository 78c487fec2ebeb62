/**
 * A request that asks for a protocol upgrade the server does not offer is served as if it had
 * not asked (RFC 9110 §7.8; ignored-upgrade.ts): the JDK's default HttpClient sends
 * `Connection: Upgrade, HTTP2-Settings` + `Upgrade: h2c` on every plain-http request, and got a
 * bare 404 with nothing reaching the gateway (fresh-tester finding). Raw sockets, a real
 * control plane and a fake Anthropic upstream that records what it receives.
 */
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runningJob, startTestServer, TEST_GATEWAY, type TestServer } from './test-helpers.js';

const REPLY = JSON.stringify({ id: 'msg_1', type: 'message', role: 'assistant', model: 'claude-haiku-4-5', content: [{ type: 'text', text: 'ok' }], stop_reason: 'end_turn', usage: { input_tokens: 10, output_tokens: 2 } });
const seen: Array<{ headers: IncomingHttpHeaders; body: string }> = [];
let upstream: Server;
let t: TestServer;
let token: string;

beforeAll(async () => {
  upstream = createServer((req, res) => {
    let body = '';
    req.on('data', (d) => (body += d));
    req.on('end', () => {
      seen.push({ headers: req.headers, body });
      res.writeHead(200, { 'content-type': 'application/json' }).end(REPLY);
    });
  });
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
  t = await startTestServer({ gateway: { ...TEST_GATEWAY, provider: 'anthropic', anthropicApiKey: 'sk-ant-upgrade-test', anthropicBaseUrl: `http://127.0.0.1:${(upstream.address() as AddressInfo).port}` } });
  token = (await runningJob(t, 1, 'sess-upgrade')).token;
});
afterAll(async () => {
  await t.close();
  await new Promise<void>((r) => upstream.close(() => r()));
});

/** One keep-alive socket: `send(bytes...)` writes each part 30 ms apart and resolves with the next whole response (Content-Length framed). */
function rawConnection(port: number) {
  const socket = net.connect(port, '127.0.0.1');
  let buf = Buffer.alloc(0);
  let waiting: (() => void) | null = null;
  socket.on('data', (d) => {
    buf = Buffer.concat([buf, d]);
    waiting?.();
  });
  const next = (): { status: number; headers: string; body: string } | null => {
    const end = buf.indexOf('\r\n\r\n');
    if (end < 0) return null;
    const head = buf.toString('latin1', 0, end);
    const len = Number(/\r\ncontent-length: (\d+)/i.exec(head)?.[1] ?? 0);
    if (buf.length < end + 4 + len) return null;
    const body = buf.toString('utf8', end + 4, end + 4 + len);
    buf = buf.subarray(end + 4 + len);
    return { status: Number(head.slice(9, 12)), headers: head, body };
  };
  return {
    async send(...parts: string[]) {
      for (const [i, p] of parts.entries()) {
        if (i > 0) await new Promise((r) => setTimeout(r, 30));
        socket.write(p);
      }
      for (;;) {
        const r = next();
        if (r) return r;
        await new Promise<void>((resolve) => (waiting = resolve));
      }
    },
    close: () => socket.destroy(),
  };
}

const body = JSON.stringify({ model: 'claude-haiku-4-5', max_tokens: 64, messages: [{ role: 'user', content: 'hello' }] });

describe('a request asking for an upgrade the server does not offer', () => {
  it('h2c (the JDK client): served over HTTP/1.1 as asked, its body sent in parts, and the next request on the connection too; the upstream sees no upgrade header', async () => {
    const c = rawConnection(Number(new URL(t.url).port));
    try {
      const head = `POST /v1/messages?beta=true HTTP/1.1\r\nHost: x\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQCAAAAAAIAAAAA\r\nContent-Type: application/json\r\nx-api-key: ${token}\r\nanthropic-version: 2023-06-01\r\nX-Odd: a  b\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n`;
      const first = await c.send(head + body.slice(0, 20), body.slice(20));
      expect([first.status, first.body]).toEqual([200, REPLY]);
      expect(first.headers).not.toMatch(/\r\nupgrade:/i);
      const second = await c.send(`POST /v1/messages HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nx-api-key: ${token}\r\nanthropic-version: 2023-06-01\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
      expect([second.status, second.body]).toEqual([200, REPLY]);
    } finally {
      c.close();
    }
    expect(seen).toHaveLength(2);
    expect(seen[0]!.body).toBe(body);
    expect(seen[0]!.headers).not.toHaveProperty('upgrade');
    expect(seen[0]!.headers).not.toHaveProperty('http2-settings');
    expect(seen[0]!.headers['x-odd']).toBe('a  b');
    expect(String(seen[0]!.headers.connection ?? '')).not.toMatch(/upgrade/i);
  });

  it('a WebSocket to the gateway: the gateway\'s own 405 in Anthropic\'s shape, naming the method and path (it was a bare 404, no body); the API answers as usual', async () => {
    const c = rawConnection(Number(new URL(t.url).port));
    try {
      const r = await c.send('GET /v1/messages HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nanthropic-version: 2023-06-01\r\n\r\n');
      expect([r.status, JSON.parse(r.body)]).toEqual([405, { type: 'error', error: { type: 'invalid_request_error', message: expect.stringMatching(/^GET \/v1\/messages: this endpoint takes POST/) } }]);
      const h = await c.send('GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: keep-alive, Upgrade\r\nUpgrade: h2c\r\n\r\n');
      expect(h.status).toBe(200);
      expect(JSON.parse(h.body)).toMatchObject({ ok: true });
    } finally {
      c.close();
    }
  });
});
