import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { register } from './credential.js';

/** `flotilla runner --server URL` where URL is not Flotilla: registration fails in one line naming it. */
describe('registering with a server that is not Flotilla', () => {
  let html: Server;
  let url = '';
  beforeAll(async () => {
    html = createServer((_req, res) => {
      res.writeHead(501, { 'content-type': 'text/html;charset=utf-8' });
      res.end('<!DOCTYPE HTML>\n<html><body><h1>Error response</h1>\n<p>Error code: 501</p></body></html>\n');
    });
    await new Promise<void>((r) => html.listen(0, '127.0.0.1', r));
    url = `http://127.0.0.1:${(html.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((r) => html.close(() => r())));

  const req = { token: 'flr_abcdefabcdef', name: 'box', labels: {}, capacity: 1 };

  it('an HTTP server answering HTML: its URL, status and content type, no HTML', async () => {
    await expect(register(url, req)).rejects.toThrow(new Error(`runner registration failed: ${url} answered 501 with text/html: is --server the Flotilla control plane?`));
  });

  it('https:// to a plain-HTTP port: "TLS handshake failed ...: is the server https?"', async () => {
    const https = url.replace(/^http:/, 'https:');
    await expect(register(https, req)).rejects.toThrow(new Error(`cannot reach the control plane at ${https} to register: TLS handshake failed (ERR_SSL_WRONG_VERSION_NUMBER): is the server https?`));
  });
});
