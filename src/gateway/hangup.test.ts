/**
 * Issue 3: a client that reads 5 events of a long stream and hangs up still gets its call
 * recorded with its input tokens and an output > 0 (an estimate, marked as one), and the tree
 * is charged that (the reservation released).
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { SseParser } from './sse.js';
import { createGateway } from './gateway.js';
import { MemoryGatewayStore } from './memory-store.js';
import { loadPriceTable } from './prices.js';
import { listen, type TestServer } from './test-server.js';

const TOKEN = 'flj_hangup_0123456789abcdefghijk';
const ev = (type: string, data: object) => `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;
let up: Server;
let upstreamClosed = false;
let gw: TestServer;
const store = new MemoryGatewayStore();

beforeAll(async () => {
  up = createServer((req, res) => {
    req.resume();
    res.on('close', () => (upstreamClosed = true));
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write(ev('message_start', { message: { id: 'm', type: 'message', role: 'assistant', model: 'claude-sonnet-4-5', content: [], usage: { input_tokens: 1000, cache_read_input_tokens: 0, output_tokens: 1 } } }));
    res.write(ev('content_block_start', { index: 0, content_block: { type: 'text', text: '' } }));
    let i = 0;
    const t = setInterval(() => {
      if (res.destroyed || i++ > 500) return clearInterval(t);
      res.write(ev('content_block_delta', { index: 0, delta: { type: 'text_delta', text: 'twelve bytes' } }));
    }, 10);
  });
  await new Promise<void>((r) => up.listen(0, '127.0.0.1', r));
  store.addJob(TOKEN, { id: 2, budgetMicros: 5_000_000 });
  const app = createGateway({ store, config: { provider: 'anthropic', anthropicApiKey: 'k', anthropicBaseUrl: `http://127.0.0.1:${(up.address() as AddressInfo).port}`, prices: loadPriceTable() }, scriptFor: async () => null });
  gw = await listen(app.fetch);
});
afterAll(async () => {
  await gw.close();
  up.closeAllConnections();
  await new Promise<void>((r) => up.close(() => r()));
});

it('reads 5 events, hangs up: recorded with its input tokens, output > 0, charged, reservation released', async () => {
  const ac = new AbortController();
  const res = await fetch(gw.url + '/v1/messages', { method: 'POST', signal: ac.signal, headers: { 'content-type': 'application/json', 'x-api-key': TOKEN }, body: JSON.stringify({ model: 'claude-sonnet-4-5', max_tokens: 4000, stream: true, messages: [{ role: 'user', content: 'write a lot' }] }) });
  const reader = res.body!.getReader();
  const parser = new SseParser();
  let events = 0;
  while (events < 5) {
    const r = await reader.read();
    if (r.done) break;
    events += parser.push(r.value).length;
  }
  expect(events).toBeGreaterThanOrEqual(5);
  ac.abort();
  await expect.poll(() => store.calls.length, { timeout: 5000 }).toBe(1);
  const c = store.calls[0]!;
  expect(c.usageKnown).toBe(false);
  expect(c.inputTokens).toBe(1000);
  expect(c.outputTokens).toBeGreaterThan(0);
  // sonnet: 1000 × 3 µ$ + output × 15 µ$
  expect(c.costMicros).toBe(3000 + c.outputTokens * 15);
  expect(store.budgets.get(2)).toEqual({ limit: 5_000_000, spent: c.costMicros, reserved: 0 });
  await expect.poll(() => upstreamClosed, { timeout: 5000 }).toBe(true);
});

it('a client that hangs up before a non-streamed reply (node path): the upstream call is aborted, the call recorded as an estimate (input by size, output 1), charged', async () => {
  let upstreamGone = false;
  let upstreamGot = false;
  const slow = createServer((req, res) => {
    upstreamGot = true;
    req.resume();
    res.on('close', () => (upstreamGone = true)); // never answers
  });
  await new Promise<void>((r) => slow.listen(0, '127.0.0.1', r));
  const mine = new MemoryGatewayStore();
  mine.addJob(TOKEN, { id: 3, budgetMicros: 5_000_000 });
  const app = createGateway({ store: mine, config: { provider: 'anthropic', anthropicApiKey: 'k', anthropicBaseUrl: `http://127.0.0.1:${(slow.address() as AddressInfo).port}`, prices: loadPriceTable() }, scriptFor: async () => null });
  const server = createServer((req, res) => app.node(req, res));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  try {
    const body = JSON.stringify({ model: 'claude-sonnet-4-5', max_tokens: 100, messages: [{ role: 'user', content: 'x'.repeat(400) }] });
    const ac = new AbortController();
    const sent = fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/messages`, { method: 'POST', signal: ac.signal, headers: { 'content-type': 'application/json', 'x-api-key': TOKEN }, body });
    await expect.poll(() => upstreamGot, { timeout: 5000 }).toBe(true); // the call is upstream now
    ac.abort();
    await sent.catch(() => undefined);
    await expect.poll(() => mine.calls.length, { timeout: 5000 }).toBe(1);
    // the gateway destroyed its upstream socket; the upstream sees the close a moment later
    await expect.poll(() => upstreamGone, { timeout: 5000 }).toBe(true);
    // input ⌈bytes / 4⌉, output 1, at sonnet-4-5's $3 / $15 per million: µ$ = 3 × input + 15
    const input = Math.ceil(Buffer.byteLength(body) / 4);
    expect(mine.calls[0]).toMatchObject({ httpStatus: 0, usageKnown: false, inputTokens: input, outputTokens: 1, costMicros: 3 * input + 15 });
    expect(mine.budgets.get(3)).toEqual({ limit: 5_000_000, spent: 3 * input + 15, reserved: 0 });
  } finally {
    server.closeAllConnections();
    await new Promise<void>((r) => server.close(() => r()));
    slow.closeAllConnections();
    await new Promise<void>((r) => slow.close(() => r()));
  }
});
