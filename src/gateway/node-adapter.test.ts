/**
 * The gateway's plain node:http path (node-adapter.ts, what the control plane serves /v1/* with):
 * a real HTTP server in front, a real fake upstream behind. Figures are worked out from the
 * upstream's replies and the price table (claude-sonnet-4-5: 3 µ$ per input token, 15 µ$ per
 * output token).
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { SseParser } from './sse.js';
import { createGateway } from './gateway.js';
import { MemoryGatewayStore } from './memory-store.js';
import { loadPriceTable } from './prices.js';

const TOKEN = 'flj_nodepath_0123456789abcdefghij';
const ev = (type: string, data: object) => `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;
const store = new MemoryGatewayStore();
let up: Server;
let gwServer: Server;
let gwUrl = '';
let upstreamClosed = false;
const seen: Array<{ url: string; headers: Record<string, unknown>; body: string }> = [];

const JSON_REPLY = { id: 'msg_1', type: 'message', role: 'assistant', model: 'claude-sonnet-4-5', content: [{ type: 'text', text: 'hi' }], stop_reason: 'end_turn', usage: { input_tokens: 100, output_tokens: 20 } };

beforeAll(async () => {
  up = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      seen.push({ url: req.url ?? '', headers: req.headers, body });
      const r = JSON.parse(body) as { stream?: boolean; messages: Array<{ content: string }> };
      if (!r.stream) {
        res.writeHead(200, { 'content-type': 'application/json', 'request-id': 'req_up_1' });
        return void res.end(JSON.stringify(JSON_REPLY));
      }
      res.on('close', () => (upstreamClosed = true));
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(ev('message_start', { message: { id: 'm', type: 'message', role: 'assistant', model: 'claude-sonnet-4-5', content: [], usage: { input_tokens: 1000, output_tokens: 1 } } }));
      res.write(ev('content_block_start', { index: 0, content_block: { type: 'text', text: '' } }));
      if (r.messages[0]?.content === 'short') {
        res.write(ev('content_block_delta', { index: 0, delta: { type: 'text_delta', text: 'done' } }));
        res.write(ev('message_delta', { delta: { stop_reason: 'end_turn' }, usage: { output_tokens: 7 } }));
        return void res.end(ev('message_stop', {}));
      }
      let i = 0;
      const t = setInterval(() => {
        if (res.destroyed || i++ > 500) return clearInterval(t);
        res.write(ev('content_block_delta', { index: 0, delta: { type: 'text_delta', text: 'twelve bytes' } }));
      }, 10);
    });
  });
  await new Promise<void>((r) => up.listen(0, '127.0.0.1', r));
  store.addJob(TOKEN, { id: 3, budgetMicros: 5_000_000 });
  const gateway = createGateway({
    store,
    config: { provider: 'anthropic', anthropicApiKey: 'sk-server', anthropicBaseUrl: `http://127.0.0.1:${(up.address() as AddressInfo).port}`, prices: loadPriceTable(), maxRequestBytes: 2000, retry: { retries: 0 } },
    scriptFor: async () => null,
  });
  gwServer = createServer((req, res) => gateway.node(req, res));
  await new Promise<void>((r) => gwServer.listen(0, '127.0.0.1', r));
  gwUrl = `http://127.0.0.1:${(gwServer.address() as AddressInfo).port}`;
});
afterAll(async () => {
  gwServer.closeAllConnections();
  up.closeAllConnections();
  await new Promise<void>((r) => gwServer.close(() => r()));
  await new Promise<void>((r) => up.close(() => r()));
});
beforeEach(() => {
  store.calls.length = 0;
  seen.length = 0;
});

const post = (path: string, body: string, init: RequestInit = {}) =>
  fetch(gwUrl + path, { method: 'POST', ...init, headers: { 'content-type': 'application/json', 'x-api-key': TOKEN, 'anthropic-version': '2023-06-01', ...(init.headers as Record<string, string>) }, body });

describe('gateway over plain node:http', () => {
  it('the job token goes upstream in no header, whatever header the client also put it in (as Bearer too)', async () => {
    const body = JSON.stringify({ model: 'claude-sonnet-4-5', max_tokens: 100, messages: [{ role: 'user', content: 'x' }] });
    const res = await fetch(gwUrl + '/v1/messages', { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}`, 'x-echo': TOKEN, 'x-trace': `job=${TOKEN};a=1`, 'x-other': 'kept' }, body });
    expect(res.status).toBe(200);
    expect(JSON.stringify(seen[0]!.headers)).not.toContain(TOKEN);
    expect(seen[0]!.headers).toMatchObject({ 'x-other': 'kept', 'x-api-key': 'sk-server' });
    expect(seen[0]!.headers).not.toHaveProperty('x-echo');
  });

  it('non-streamed: the upstream reply byte for byte, the server key upstream (not the job token), one row priced from its usage', async () => {
    const res = await post('/v1/messages?beta=true', JSON.stringify({ model: 'claude-sonnet-4-5', max_tokens: 100, messages: [{ role: 'user', content: 'x' }] }));
    expect(res.status).toBe(200);
    expect(res.headers.get('request-id')).toBe('req_up_1');
    expect(await res.json()).toEqual(JSON_REPLY);
    expect(seen[0]).toMatchObject({ url: '/v1/messages?beta=true', headers: { 'x-api-key': 'sk-server', 'anthropic-version': '2023-06-01' } });
    expect(JSON.stringify(seen[0]!.headers)).not.toContain(TOKEN);
    expect(store.calls).toHaveLength(1);
    // 100 × 3 + 20 × 15 µ$
    expect(store.calls[0]).toMatchObject({ jobId: 3, httpStatus: 200, inputTokens: 100, outputTokens: 20, usageKnown: true, costMicros: 600, streamed: false });
  });

  it('streamed: every event passes through; usage from message_delta; row written before the end reaches the client', async () => {
    const res = await post('/v1/messages', JSON.stringify({ model: 'claude-sonnet-4-5', max_tokens: 100, stream: true, messages: [{ role: 'user', content: 'short' }] }));
    expect(res.headers.get('content-type')).toBe('text/event-stream');
    expect(res.headers.get('cache-control')).toBe('no-cache');
    const events = new SseParser().push(await res.text()).map((e) => e.event);
    expect(events).toEqual(['message_start', 'content_block_start', 'content_block_delta', 'message_delta', 'message_stop']);
    expect(store.calls).toHaveLength(1);
    // 1000 × 3 + 7 × 15 µ$
    expect(store.calls[0]).toMatchObject({ httpStatus: 200, inputTokens: 1000, outputTokens: 7, usageKnown: true, costMicros: 3105, streamed: true });
  });

  it('client hangs up mid-stream: the upstream call is closed, the call recorded as an estimate and charged', async () => {
    upstreamClosed = false;
    const ac = new AbortController();
    const res = await post('/v1/messages', JSON.stringify({ model: 'claude-sonnet-4-5', max_tokens: 4000, stream: true, messages: [{ role: 'user', content: 'long' }] }), { signal: ac.signal });
    const reader = res.body!.getReader();
    const parser = new SseParser();
    let n = 0;
    while (n < 5) {
      const r = await reader.read();
      if (r.done) break;
      n += parser.push(r.value).length;
    }
    ac.abort();
    await expect.poll(() => store.calls.length, { timeout: 5000 }).toBe(1);
    const c = store.calls[0]!;
    expect(c.usageKnown).toBe(false);
    expect(c.inputTokens).toBe(1000);
    expect(c.outputTokens).toBeGreaterThan(0);
    expect(c.costMicros).toBe(3000 + c.outputTokens * 15);
    await expect.poll(() => upstreamClosed, { timeout: 5000 }).toBe(true);
    expect(store.budgets.get(3)?.reserved).toBe(0);
  });

  it('a body over maxRequestBytes: 413 naming its size, recorded as refused, upstream untouched', async () => {
    const big = JSON.stringify({ model: 'claude-sonnet-4-5', max_tokens: 10, messages: [{ role: 'user', content: 'x'.repeat(5000) }] });
    const res = await post('/v1/messages', big);
    expect(res.status).toBe(413);
    expect(res.headers.get('x-should-retry')).toBe('false');
    expect(((await res.json()) as { error: { type: string; message: string } }).error).toEqual({ type: 'request_too_large', message: `request body is ${Buffer.byteLength(big)} bytes; the limit is 2000` });
    expect(store.calls.map((c) => [c.httpStatus, c.refused])).toEqual([[413, 'too_large']]);
    expect(seen).toHaveLength(0);
  });

  it('bad token → 401; unknown /v1 path or method → 404 not_found_error; nothing recorded', async () => {
    const a = await post('/v1/messages', '{}', { headers: { 'x-api-key': 'flj_nope' } });
    expect(a.status).toBe(401);
    expect(a.headers.get('x-should-retry')).toBe('false');
    expect(((await a.json()) as { error: { type: string } }).error.type).toBe('authentication_error');
    const b = await post('/v1/complete', '{}');
    expect(b.status).toBe(404);
    expect(b.headers.get('x-should-retry')).toBe('false'); // retrying cannot make the endpoint exist
    expect(((await b.json()) as { error: { message: string } }).error.message).toBe('no such endpoint: POST /v1/complete');
    const c = await fetch(gwUrl + '/v1/messages', { headers: { 'x-api-key': TOKEN } });
    expect(c.status).toBe(404);
    expect(store.calls).toHaveLength(0);
  });
});
