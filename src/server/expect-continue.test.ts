/**
 * `Expect: 100-continue` (RFC 9110 §10.1.1; curl sends it for bodies over 1 MB): a model call
 * gets its 100 Continue only once the gateway will read the body. node answered 100 Continue at
 * once, so a client about to upload 100 MB was invited to, and refused 413 a moment later
 * (tester finding). Raw sockets against a real control plane and a fake Anthropic upstream.
 */
import { createServer, type Server } from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runningJob, startTestServer, TEST_GATEWAY, type TestServer } from './test-helpers.js';

const REPLY = JSON.stringify({ id: 'msg_1', type: 'message', role: 'assistant', model: 'claude-haiku-4-5', content: [{ type: 'text', text: 'ok' }], stop_reason: 'end_turn', usage: { input_tokens: 10, output_tokens: 2 } });
let upstream: Server;
let t: TestServer;
let token: string;

beforeAll(async () => {
  upstream = createServer((req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end(REPLY));
  });
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
  t = await startTestServer({ gateway: { ...TEST_GATEWAY, provider: 'anthropic', anthropicApiKey: 'sk-ant-continue-test', anthropicBaseUrl: `http://127.0.0.1:${(upstream.address() as AddressInfo).port}` } });
  token = (await runningJob(t, 1, 'sess-continue')).token;
});
afterAll(async () => {
  await t.close();
  await new Promise<void>((r) => upstream.close(() => r()));
});

/** Sends `head`, waits for the first bytes of an answer (or 300 ms), then sends `body` when the answer was a 100 Continue; resolves with everything received until the socket closes or 2 s pass. */
function expecting(head: string, body: string): Promise<{ first: string; all: string }> {
  return new Promise((resolve) => {
    const socket = net.connect(Number(new URL(t.url).port), '127.0.0.1');
    let all = '';
    let first = '';
    const done = () => {
      socket.destroy();
      resolve({ first, all });
    };
    const timer = setTimeout(done, 2_000);
    socket.on('data', (d) => {
      all += d.toString('latin1');
      if (first === '') {
        first = all;
        if (first.startsWith('HTTP/1.1 100 ')) socket.write(body);
      }
      // whole: a final response with its Content-Length body
      const end = all.lastIndexOf('\r\n\r\n');
      const len = /\r\ncontent-length: (\d+)/i.exec(all.slice(all.lastIndexOf('HTTP/1.1 ')))?.[1];
      const final = !all.startsWith('HTTP/1.1 100 ') || all.indexOf('HTTP/1.1 ', 1) > 0;
      if (final && end >= 0 && len !== undefined && all.length >= end + 4 + Number(len)) {
        clearTimeout(timer);
        done();
      }
    });
    socket.on('close', () => {
      clearTimeout(timer);
      done();
    });
    socket.write(head);
  });
}

const body = JSON.stringify({ model: 'claude-haiku-4-5', max_tokens: 64, messages: [{ role: 'user', content: 'hello' }] });
const head = (o: { token: string; length: number }) =>
  `POST /v1/messages HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nx-api-key: ${o.token}\r\nanthropic-version: 2023-06-01\r\nExpect: 100-continue\r\nContent-Length: ${o.length}\r\n\r\n`;

describe('Expect: 100-continue on the gateway', () => {
  it('a call the gateway will serve: 100 Continue, then the body, then the reply', async () => {
    const r = await expecting(head({ token, length: Buffer.byteLength(body) }), body);
    expect(r.first.startsWith('HTTP/1.1 100 Continue\r\n\r\n')).toBe(true);
    expect(r.all).toContain('HTTP/1.1 200 OK\r\n');
    expect(r.all.endsWith(REPLY)).toBe(true);
  });

  it('a declared size over the limit: 413 at once, no 100 Continue first', async () => {
    const r = await expecting(head({ token, length: 104_857_600 }), '');
    expect(r.first).toMatch(/^HTTP\/1\.1 413 /);
    expect(r.all).not.toContain('100 Continue');
    expect(r.all).toMatch(/\r\nconnection: close\r\n/i);
  });

  it('an unknown token: 401 at once, no 100 Continue first', async () => {
    const r = await expecting(head({ token: 'flj_unknown_0123456789abcdefghijklmn', length: Buffer.byteLength(body) }), body);
    expect(r.first).toMatch(/^HTTP\/1\.1 401 /);
    expect(r.all).not.toContain('100 Continue');
  });

  it('the API: 100 Continue at once, as before', async () => {
    const r = await expecting(`POST /api/jobs HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nAuthorization: Bearer ${t.admin}\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n`, '{}');
    expect(r.first.startsWith('HTTP/1.1 100 Continue\r\n\r\n')).toBe(true);
    expect(r.all).toMatch(/HTTP\/1\.1 400 /);
  });
});
