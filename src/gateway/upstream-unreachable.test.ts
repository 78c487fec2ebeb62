/**
 * An upstream the gateway cannot reach, and a count_tokens reply that began and broke: the job's
 * 502 names the provider, the connection's error and the base-URL setting an admin should check
 * (fresh-tester finding: "the model provider could not be reached" alone, the cause only in the
 * server log; a count_tokens reply cut mid-body, a connection closed after the request and a reply
 * over the size limit were called unreachable too). Gateway over
 * node:http, memory store, no retries.
 */
import { createServer as createTcpServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { startGateway } from './test-server.js';
import { rawUpstream, type FakeUpstream } from './test-upstream.js';
import { setMaxReplyBytes } from './upstream-http.js';

const TOKEN = 'flj_unreachable_0123456789abcdefg';
const MESSAGES = { model: 'claude-sonnet-4-5', max_tokens: 100, messages: [{ role: 'user', content: 'x' }] };

/** A port nothing listens on (bound, then closed). */
async function closedPort(): Promise<number> {
  const s = createTcpServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as AddressInfo).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

describe('an unreachable upstream', () => {
  it.each(['/v1/messages', '/v1/messages/count_tokens'])('%s: 502 naming the provider, the cause and ANTHROPIC_BASE_URL', async (path) => {
    const port = await closedPort();
    const nowhere: FakeUpstream = { url: `http://127.0.0.1:${port}`, seen: [], close: async () => undefined };
    const gw = await startGateway({ upstream: nowhere, job: { token: TOKEN, id: 4, budgetMicros: 5_000_000 } });
    try {
      const res = await gw.post(path, MESSAGES);
      expect(res.status).toBe(502);
      expect(res.headers.get('x-should-retry')).toBe('false');
      expect(await res.json()).toEqual({
        type: 'error',
        error: { type: 'api_error', message: `the model provider (anthropic) could not be reached: connect ECONNREFUSED 127.0.0.1:${port}; an admin should check ANTHROPIC_BASE_URL in the server's environment` },
      });
    } finally {
      await gw.close();
    }
  });

  it('count_tokens: a 200 cut mid-body says the reply could not be read, not that the provider was unreachable', async () => {
    const up = await rawUpstream((socket) => {
      socket.write('HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n{"input_tok');
      socket.destroy();
    });
    const gw = await startGateway({ upstream: up, job: { token: TOKEN, id: 4, budgetMicros: 5_000_000 } });
    try {
      const res = await gw.post('/v1/messages/count_tokens', MESSAGES);
      expect(res.status).toBe(502);
      const body = (await res.json()) as { error: { type: string; message: string } };
      expect(body.error.type).toBe('api_error');
      expect(body.error.message).toMatch(/^the model provider's reply \(HTTP 200\) could not be read: .+; a token count is not billed$/);
      await expect.poll(() => gw.store.calls.length).toBe(1);
      expect(gw.store.calls[0]).toMatchObject({ api: 'anthropic-count-tokens', costMicros: 0, inputTokens: 0, outputTokens: 0 });
    } finally {
      await gw.close();
      await up.close();
    }
  });

  it('count_tokens: a connection closed after the request, or a reply over the size limit, is named as such, not as unreachable (fresh-tester finding)', async () => {
    // called once the whole request is read: closes without a byte of reply
    const dropping = await rawUpstream((socket) => socket.destroy());
    const gw = await startGateway({ upstream: dropping, job: { token: TOKEN, id: 4, budgetMicros: 5_000_000 } });
    try {
      const res = await gw.post('/v1/messages/count_tokens', MESSAGES);
      const body = (await res.json()) as { error: { type: string; message: string } };
      expect([res.status, body.error.type]).toEqual([502, 'api_error']);
      expect(body.error.message).toMatch(/^the model provider \(anthropic\) closed the connection after the request was sent, before replying \(.+\); a token count is not billed$/);
      await expect.poll(() => gw.store.calls.length).toBe(1);
      expect(gw.store.calls[0]).toMatchObject({ api: 'anthropic-count-tokens', costMicros: 0 });
    } finally {
      await gw.close();
      await dropping.close();
    }

    setMaxReplyBytes(1000);
    const huge = await rawUpstream((socket) => socket.end(`HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 2000\r\n\r\n{"input_tokens":1,"pad":"${'x'.repeat(1973)}"}`));
    const gw2 = await startGateway({ upstream: huge, job: { token: TOKEN, id: 4, budgetMicros: 5_000_000 } });
    try {
      const res = await gw2.post('/v1/messages/count_tokens', MESSAGES);
      expect([res.status, ((await res.json()) as { error: { message: string } }).error.message]).toEqual([
        502,
        "the model provider's reply (HTTP 200) is over the gateway's 1000-byte limit for a whole reply; it was not passed on (a token count is not billed)",
      ]);
      await expect.poll(() => gw2.store.calls.length).toBe(1);
      expect(gw2.store.calls[0]).toMatchObject({ costMicros: 0 });
    } finally {
      setMaxReplyBytes();
      await gw2.close();
      await huge.close();
    }
  });
});

