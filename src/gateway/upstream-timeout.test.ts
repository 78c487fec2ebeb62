/**
 * A hung upstream does not keep a call (and its job) stuck: with the timeouts lowered
 * (setUpstreamTimeouts), an upstream that sends no headers, or stops in the middle of a whole
 * body, gets the client a 504 (x-should-retry: false) after about the timeout; the call is not
 * retried (the upstream may have worked on it) and is charged an estimate, never $0, its
 * reservation settled. A stream that stalls is cut and charged as a broken stream; a slow stream
 * that keeps sending is not cut.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createGateway } from './gateway.js';
import { MemoryGatewayStore } from './memory-store.js';
import { listen } from './test-server.js';
import { setUpstreamTimeouts, UPSTREAM_BODY_TIMEOUT_MS, UPSTREAM_HEADERS_TIMEOUT_MS } from './upstream-http.js';

const TOKEN = 'flj_upstreamtimeout_0123456789abcdef';
const HEADERS_MS = 400;
const BODY_MS = 400;
// 1 µ$ per input token, 2 µ$ per output token
const prices = { version: 't', models: {}, default: { input: 1, output: 2, cacheWrite5m: 1, cacheWrite1h: 1, cacheRead: 0.5 } };

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});
beforeAll(() => setUpstreamTimeouts({ headersMs: HEADERS_MS, bodyMs: BODY_MS }));
afterAll(() => setUpstreamTimeouts());

type Behaviour = (req: IncomingMessage, res: ServerResponse) => void;

async function setup(behaviour: Behaviour) {
  let calls = 0;
  const up = createServer((req, res) => {
    calls += 1;
    req.resume();
    req.on('end', () => behaviour(req, res));
  });
  await new Promise<void>((r) => up.listen(0, '127.0.0.1', r));
  cleanups.push(
    () =>
      new Promise<void>((r) => {
        up.closeAllConnections();
        up.close(() => r());
      }),
  );
  const base = `http://127.0.0.1:${(up.address() as AddressInfo).port}`;
  const store = new MemoryGatewayStore();
  store.addJob(TOKEN, { id: 4, budgetMicros: 10_000_000 });
  const app = createGateway({
    store,
    config: { provider: 'anthropic', anthropicApiKey: 'sk-ant-test-timeout-key', anthropicBaseUrl: base, prices, openai: { provider: 'openai', baseUrl: `${base}/v1`, apiKeys: ['sk-test-timeout-key'] }, modelProviders: [{ pattern: 'claude-*', provider: 'anthropic' }, { pattern: 'gpt-*', provider: 'openai' }] },
    scriptFor: async () => null,
  });
  const gw = await listen(app.fetch);
  cleanups.push(() => gw.close());
  const post = (path: string, body: string, headers: Record<string, string>) => fetch(gw.url + path, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });
  return { store, post, calls: () => calls };
}

const responsesBody = (stream: boolean) => JSON.stringify({ model: 'gpt-5', input: 'think hard', max_output_tokens: 1000, stream });
const messagesBody = JSON.stringify({ model: 'claude-sonnet-4-5', max_tokens: 1000, messages: [{ role: 'user', content: 'think hard' }] });
const B = { authorization: `Bearer ${TOKEN}` };

describe('upstream timeouts', () => {
  it('the defaults are 10 minutes for headers and 5 minutes between body chunks', () => {
    expect(UPSTREAM_HEADERS_TIMEOUT_MS).toBe(600_000);
    expect(UPSTREAM_BODY_TIMEOUT_MS).toBe(300_000);
  });

  it('OpenAI Responses, no headers: 504 after the headers timeout, not retried, charged an estimate (input by size, 1 output token)', async () => {
    const { store, post, calls } = await setup(() => undefined); // never answers
    const body = responsesBody(false);
    const t0 = Date.now();
    const res = await post('/v1/responses', body, B);
    expect(res.status).toBe(504);
    expect(res.headers.get('x-should-retry')).toBe('false');
    const j = (await res.json()) as { error: { type: string; message: string } };
    expect(j.error).toMatchObject({ type: 'server_error', message: `the model provider sent no reply within ${HEADERS_MS} ms; the call was given up` });
    expect(Date.now() - t0).toBeGreaterThanOrEqual(HEADERS_MS - 50);
    expect(Date.now() - t0).toBeLessThan(10_000);
    expect(calls()).toBe(1);
    const inTokens = Math.ceil(Buffer.byteLength(body) / 4);
    expect(store.calls).toHaveLength(1);
    expect(store.calls[0]).toMatchObject({ httpStatus: 504, usageKnown: false, inputTokens: inTokens, outputTokens: 1, costMicros: inTokens * 1 + 1 * 2 });
    expect(store.budgets.get(4)).toEqual({ limit: 10_000_000, spent: inTokens + 2, reserved: 0 });
    expect(store.reservations.size).toBe(0);
  });

  it('Anthropic Messages, no headers: the same in its shape (504 api_error), charged an estimate', async () => {
    const { store, post, calls } = await setup(() => undefined);
    const res = await post('/v1/messages', messagesBody, { 'x-api-key': TOKEN });
    expect(res.status).toBe(504);
    expect(res.headers.get('x-should-retry')).toBe('false');
    expect(await res.json()).toMatchObject({ type: 'error', error: { type: 'api_error', message: `the model provider sent no reply within ${HEADERS_MS} ms; the call was given up` } });
    expect(calls()).toBe(1);
    const inTokens = Math.ceil(Buffer.byteLength(messagesBody) / 4);
    expect(store.calls[0]).toMatchObject({ httpStatus: 504, usageKnown: false, inputTokens: inTokens, outputTokens: 1, costMicros: inTokens + 2 });
    expect(store.reservations.size).toBe(0);
  });

  it('a whole 2xx body that stalls halfway: 504, not retried, output estimated from the 400 bytes received', async () => {
    const head = '{"id":"resp_1","output":[{"type":"message","content":[{"type":"output_text","text":"';
    const sent = head + 'x'.repeat(400 - head.length);
    expect(sent).toHaveLength(400);
    const { store, post, calls } = await setup((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': '100000' });
      res.write(sent);
    });
    const body = responsesBody(false);
    const res = await post('/v1/responses', body, B);
    expect(res.status).toBe(504);
    expect(((await res.json()) as { error: { message: string } }).error.message).toBe(`the model provider's reply stalled (no data for ${BODY_MS} ms); the call was given up`);
    expect(calls()).toBe(1);
    const inTokens = Math.ceil(Buffer.byteLength(body) / 4);
    // 400 bytes / 4 = 100 output tokens
    expect(store.calls[0]).toMatchObject({ httpStatus: 504, usageKnown: false, inputTokens: inTokens, outputTokens: 100, costMicros: inTokens + 200 });
    expect(store.reservations.size).toBe(0);
  });

  it('a stream that stalls is cut after the body timeout and charged as a broken stream (an estimate); not retried', async () => {
    const { store, post, calls } = await setup((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(`event: response.created\ndata: ${JSON.stringify({ type: 'response.created', response: { id: 'resp_1', status: 'in_progress' } })}\n\n`);
    });
    const res = await post('/v1/responses', responsesBody(true), B);
    expect(res.status).toBe(200);
    await expect(res.text()).rejects.toThrow();
    await expect.poll(() => store.calls.length, { timeout: 5000 }).toBe(1);
    expect(calls()).toBe(1);
    expect(store.calls[0]).toMatchObject({ streamed: true, usageKnown: false });
    expect(store.calls[0]!.costMicros).toBeGreaterThan(0);
    expect(store.reservations.size).toBe(0);
  });

  it('a slow stream that keeps sending (gaps below the body timeout, longer than it in total) is not cut', async () => {
    const { store, post } = await setup((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const ev = (o: object) => res.write(`event: ${(o as { type: string }).type}\ndata: ${JSON.stringify(o)}\n\n`);
      ev({ type: 'response.created', response: { id: 'resp_1', status: 'in_progress' } });
      let n = 0;
      const t = setInterval(() => {
        n += 1;
        if (n < 6) return void ev({ type: 'response.output_text.delta', delta: 'x' });
        clearInterval(t);
        ev({ type: 'response.completed', response: { id: 'resp_1', status: 'completed', model: 'gpt-5', output: [], usage: { input_tokens: 10, output_tokens: 5 } } });
        res.end();
      }, BODY_MS / 2);
    });
    const res = await post('/v1/responses', responsesBody(true), B);
    expect(res.status).toBe(200);
    expect(await res.text()).toContain('response.completed');
    await expect.poll(() => store.calls.length).toBe(1);
    // 10 input × 1 µ$ + 5 output × 2 µ$
    expect(store.calls[0]).toMatchObject({ usageKnown: true, inputTokens: 10, outputTokens: 5, costMicros: 20 });
  });
});
