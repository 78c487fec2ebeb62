/**
 * The gateway's plain node:http path (node-adapter.ts, what the control plane serves /v1/* with):
 * a real HTTP server in front, a real fake upstream behind. Figures are worked out from the
 * upstream's replies and the price table (claude-sonnet-4-5: 3 µ$ per input token, 15 µ$ per
 * output token).
 */
import http from 'node:http';
import { describe, expect, it } from 'vitest';
import { SseParser } from './sse.js';
import { endlessStream, readEvents, textStream } from './test-metering.js';
import { forFile, startGateway, type PostInit } from './test-server.js';

const TOKEN = 'flj_nodepath_0123456789abcdefghij';
let upstreamClosed = false;

const JSON_REPLY = { id: 'msg_1', type: 'message', role: 'assistant', model: 'claude-sonnet-4-5', content: [{ type: 'text', text: 'hi' }], stop_reason: 'end_turn', usage: { input_tokens: 100, output_tokens: 20 } };

const gw = forFile(() =>
  startGateway({
    upstream: (req) => {
      const r = JSON.parse(req.body) as { stream?: boolean; messages: Array<{ content: string }> };
      if (!r.stream) return { headers: { 'content-type': 'application/json', 'request-id': 'req_up_1' }, body: JSON.stringify(JSON_REPLY) };
      if (r.messages[0]?.content !== 'short') return endlessStream({ input_tokens: 1000, output_tokens: 1 }, () => (upstreamClosed = true));
      return textStream({ input_tokens: 1000, output_tokens: 1 }, 'done', { output_tokens: 7 });
    },
    job: { token: TOKEN, id: 3, budgetMicros: 5_000_000 },
    config: { maxRequestBytes: 2000 },
  }),
);

const post = (path: string, body: string, init: PostInit = {}) => gw.post(path, body, { ...init, headers: { 'anthropic-version': '2023-06-01', ...init.headers } });

describe('gateway over plain node:http', () => {
  it('the job token goes upstream in no header, whatever header the client also put it in (as Bearer too)', async () => {
    const body = JSON.stringify({ model: 'claude-sonnet-4-5', max_tokens: 100, messages: [{ role: 'user', content: 'x' }] });
    const res = await fetch(gw.url + '/v1/messages', { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}`, 'x-echo': TOKEN, 'x-trace': `job=${TOKEN};a=1`, 'x-other': 'kept' }, body });
    expect(res.status).toBe(200);
    expect(JSON.stringify(gw.up.seen[0]!.headers)).not.toContain(TOKEN);
    expect(gw.up.seen[0]!.headers).toMatchObject({ 'x-other': 'kept', 'x-api-key': 'sk-server' });
    expect(gw.up.seen[0]!.headers).not.toHaveProperty('x-echo');
  });

  it('non-streamed: the upstream reply byte for byte, the server key upstream (not the job token), one row priced from its usage', async () => {
    const res = await post('/v1/messages?beta=true', JSON.stringify({ model: 'claude-sonnet-4-5', max_tokens: 100, messages: [{ role: 'user', content: 'x' }] }));
    expect(res.status).toBe(200);
    expect(res.headers.get('request-id')).toBe('req_up_1');
    expect(await res.json()).toEqual(JSON_REPLY);
    expect(gw.up.seen[0]).toMatchObject({ url: '/v1/messages?beta=true', headers: { 'x-api-key': 'sk-server', 'anthropic-version': '2023-06-01' } });
    expect(JSON.stringify(gw.up.seen[0]!.headers)).not.toContain(TOKEN);
    expect(gw.store.calls).toHaveLength(1);
    // 100 × 3 + 20 × 15 µ$
    expect(gw.store.calls[0]).toMatchObject({ jobId: 3, httpStatus: 200, inputTokens: 100, outputTokens: 20, usageKnown: true, costMicros: 600, streamed: false });
  });

  it('a job token in the query (?key=...) is not sent upstream; the rest of the query is, as sent', async () => {
    // a client authenticating with `?key=` as some SDKs do for Google's API sent its live token to the provider (fresh-tester finding)
    const res = await post(`/v1/messages?beta=true&key=${TOKEN}&x=a%20b`, JSON.stringify({ model: 'claude-sonnet-4-5', max_tokens: 100, messages: [{ role: 'user', content: 'x' }] }));
    expect(res.status).toBe(200);
    const seen = gw.up.seen.at(-1)!;
    expect(seen.url).toBe('/v1/messages?beta=true&x=a%20b');
    expect(JSON.stringify(seen)).not.toContain(TOKEN);
  });

  it('Expect: 100-continue (curl sends it for bodies over 1 MB): the body is taken after 100 Continue and the call goes upstream without the header', async () => {
    // It reached undici, which refuses `expect` before sending anything: the client got 502
    // "provider could not be reached" (fresh-user finding). The expectation is met here, hop by hop.
    const body = JSON.stringify({ model: 'claude-sonnet-4-5', max_tokens: 100, messages: [{ role: 'user', content: 'x' }] });
    const { port } = new URL(gw.url);
    const reply = await new Promise<{ status: number; text: string; continued: boolean }>((resolve, reject) => {
      let continued = false;
      const req = http.request({ host: '127.0.0.1', port, path: '/v1/messages', method: 'POST', headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), expect: '100-continue', 'x-api-key': TOKEN, 'anthropic-version': '2023-06-01' } }, (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (d: string) => (text += d));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text, continued }));
      });
      req.on('continue', () => {
        continued = true;
        req.end(body);
      });
      req.on('error', reject);
    });
    expect(reply).toEqual({ status: 200, text: JSON.stringify(JSON_REPLY), continued: true });
    expect(gw.up.seen).toHaveLength(1);
    expect(gw.up.seen[0]!.headers).not.toHaveProperty('expect');
    expect(gw.up.seen[0]!.body).toBe(body);
    expect(gw.store.calls).toEqual([expect.objectContaining({ httpStatus: 200, inputTokens: 100, outputTokens: 20, costMicros: 600 })]);
  });

  it('streamed: every event passes through; usage from message_delta; row written before the end reaches the client', async () => {
    const res = await post('/v1/messages', JSON.stringify({ model: 'claude-sonnet-4-5', max_tokens: 100, stream: true, messages: [{ role: 'user', content: 'short' }] }));
    expect(res.headers.get('content-type')).toBe('text/event-stream');
    expect(res.headers.get('cache-control')).toBe('no-cache');
    const events = new SseParser().push(await res.text()).map((e) => e.event);
    expect(events).toEqual(['message_start', 'content_block_start', 'content_block_delta', 'message_delta', 'message_stop']);
    expect(gw.store.calls).toHaveLength(1);
    // 1000 × 3 + 7 × 15 µ$
    expect(gw.store.calls[0]).toMatchObject({ httpStatus: 200, inputTokens: 1000, outputTokens: 7, usageKnown: true, costMicros: 3105, streamed: true });
  });

  it('client hangs up mid-stream: the upstream call is closed, the call recorded as an estimate and charged', async () => {
    upstreamClosed = false;
    const ac = new AbortController();
    const res = await post('/v1/messages', JSON.stringify({ model: 'claude-sonnet-4-5', max_tokens: 4000, stream: true, messages: [{ role: 'user', content: 'long' }] }), { signal: ac.signal });
    await readEvents(res, 5);
    ac.abort();
    await expect.poll(() => gw.store.calls.length, { timeout: 5000 }).toBe(1);
    const c = gw.store.calls[0]!;
    expect(c.usageKnown).toBe(false);
    expect(c.inputTokens).toBe(1000);
    expect(c.outputTokens).toBeGreaterThan(0);
    expect(c.costMicros).toBe(3000 + c.outputTokens * 15);
    await expect.poll(() => upstreamClosed, { timeout: 5000 }).toBe(true);
    expect(gw.store.budgets.get(3)?.reserved).toBe(0);
  });

  it('a body over maxRequestBytes: 413 naming its size, recorded as refused, upstream untouched', async () => {
    const big = JSON.stringify({ model: 'claude-sonnet-4-5', max_tokens: 10, messages: [{ role: 'user', content: 'x'.repeat(5000) }] });
    const res = await post('/v1/messages', big);
    expect(res.status).toBe(413);
    expect(res.headers.get('x-should-retry')).toBe('false');
    expect(((await res.json()) as { error: { type: string; message: string } }).error).toEqual({ type: 'request_too_large', message: `request body is ${Buffer.byteLength(big)} bytes; the limit is 2000` });
    expect(gw.store.calls.map((c) => [c.httpStatus, c.refused])).toEqual([[413, 'too_large']]);
    expect(gw.up.seen).toHaveLength(0);
  });

  it('bad token → 401; unknown /v1 path → 404 not_found_error; another method than POST → 405 Allow: POST; nothing recorded', async () => {
    const a = await post('/v1/messages', '{}', { token: 'flj_nope' });
    expect(a.status).toBe(401);
    expect(a.headers.get('x-should-retry')).toBe('false');
    expect(((await a.json()) as { error: { type: string } }).error.type).toBe('authentication_error');
    const b = await post('/v1/complete', '{}');
    expect(b.status).toBe(404);
    expect(b.headers.get('x-should-retry')).toBe('false'); // retrying cannot make the endpoint exist
    expect(((await b.json()) as { error: { message: string } }).error.message).toBe('no such endpoint: POST /v1/complete');
    const c = await fetch(gw.url + '/v1/messages', { headers: { 'x-api-key': TOKEN } });
    expect([c.status, c.headers.get('allow')]).toEqual([405, 'POST']);
    expect(gw.store.calls).toHaveLength(0);
  });
});
