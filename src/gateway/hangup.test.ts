/**
 * Issue 3: a client that reads 5 events of a long stream and hangs up still gets its call
 * recorded with its input tokens and an output > 0 (an estimate, marked as one), and the tree
 * is charged that (the reservation released).
 */
import { expect, it } from 'vitest';
import { endlessStream, readEvents } from './test-metering.js';
import { forFile, startGateway } from './test-server.js';

const TOKEN = 'flj_hangup_0123456789abcdefghijk';
let upstreamClosed = false;
const gw = forFile(() =>
  startGateway({
    upstream: () => endlessStream({ input_tokens: 1000, cache_read_input_tokens: 0, output_tokens: 1 }, () => (upstreamClosed = true)),
    job: { token: TOKEN, id: 2, budgetMicros: 5_000_000 },
    via: 'fetch',
  }),
);

/** A gateway for job `id` whose upstream takes each call and never answers; `got()` once it has one, `gone()` once the gateway closed it. */
async function silentUpstream(id: number) {
  let got = false;
  let gone = false;
  const gw = await startGateway({
    upstream: () => (res) => {
      got = true;
      res.on('close', () => (gone = true)); // never answers
    },
    job: { token: TOKEN, id, budgetMicros: 5_000_000 },
  });
  return { gw, got: () => got, gone: () => gone };
}

it('reads 5 events, hangs up: recorded with its input tokens, output > 0, charged, reservation released', async () => {
  const ac = new AbortController();
  const res = await gw.post('/v1/messages', { model: 'claude-sonnet-4-5', max_tokens: 4000, stream: true, messages: [{ role: 'user', content: 'write a lot' }] }, { signal: ac.signal });
  const events = await readEvents(res, 5);
  expect(events).toBeGreaterThanOrEqual(5);
  ac.abort();
  await expect.poll(() => gw.store.calls.length, { timeout: 5000 }).toBe(1);
  const c = gw.store.calls[0]!;
  expect(c.usageKnown).toBe(false);
  expect(c.inputTokens).toBe(1000);
  expect(c.outputTokens).toBeGreaterThan(0);
  // sonnet: 1000 × 3 µ$ + output × 15 µ$
  expect(c.costMicros).toBe(3000 + c.outputTokens * 15);
  expect(gw.store.budgets.get(2)).toEqual({ limit: 5_000_000, spent: c.costMicros, reserved: 0 });
  await expect.poll(() => upstreamClosed, { timeout: 5000 }).toBe(true);
});

it('a client that hangs up before a non-streamed reply (node path): the upstream is read to its end and the call charged what it reports, known (it was aborted and charged input + 1 output token)', async () => {
  // fresh-tester finding: a provider may serve and bill a request whose connection dropped; the
  // estimate charged ~nothing for a reply that may have cost its whole max_tokens
  let release!: () => void;
  const released = new Promise<void>((r) => (release = r));
  let upstreamGot = false;
  let upstreamClosedEarly = false;
  let answered = false;
  const slow = await startGateway({
    upstream: () => (res) => {
      upstreamGot = true;
      res.on('close', () => (upstreamClosedEarly ||= !answered));
      void released.then(() => {
        answered = true;
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ id: 'm', type: 'message', role: 'assistant', model: 'claude-sonnet-4-5', content: [{ type: 'text', text: 'done' }], stop_reason: 'end_turn', usage: { input_tokens: 120, output_tokens: 90 } }));
      });
    },
    job: { token: TOKEN, id: 3, budgetMicros: 5_000_000 },
  });
  try {
    const ac = new AbortController();
    const sent = slow.post('/v1/messages', { model: 'claude-sonnet-4-5', max_tokens: 100, messages: [{ role: 'user', content: 'x'.repeat(400) }] }, { signal: ac.signal });
    await expect.poll(() => upstreamGot, { timeout: 5000 }).toBe(true); // the call is upstream now
    ac.abort();
    await sent.catch(() => undefined);
    await new Promise((r) => setTimeout(r, 300));
    expect([upstreamClosedEarly, slow.store.calls.length]).toEqual([false, 0]); // still upstream, not recorded yet
    release();
    await expect.poll(() => slow.store.calls.length, { timeout: 5000 }).toBe(1);
    // 120 × 3 µ$ + 90 × 15 µ$ = 1,710 µ$ (sonnet-4-5)
    expect(slow.store.calls[0]).toMatchObject({ httpStatus: 200, usageKnown: true, inputTokens: 120, outputTokens: 90, costMicros: 1_710 });
    expect(slow.store.budgets.get(3)).toEqual({ limit: 5_000_000, spent: 1_710, reserved: 0 });
    expect(slow.up.seen).toHaveLength(1);
  } finally {
    release();
    await slow.close();
  }
});

it('a non-streamed call read on after its client left is still cut when its job then ends: the upstream is aborted, the call charged the estimate', async () => {
  const { gw: slow, got, gone } = await silentUpstream(7);
  try {
    const body = JSON.stringify({ model: 'claude-sonnet-4-5', max_tokens: 100, messages: [{ role: 'user', content: 'y'.repeat(400) }] });
    const ac = new AbortController();
    const sent = slow.post('/v1/messages', body, { signal: ac.signal });
    await expect.poll(got, { timeout: 5000 }).toBe(true);
    ac.abort();
    await sent.catch(() => undefined);
    await new Promise((r) => setTimeout(r, 200));
    expect(gone()).toBe(false); // read on: its client left, the gateway did not cut it
    expect(slow.app.abortJob(7)).toBe(1);
    await expect.poll(gone, { timeout: 5000 }).toBe(true);
    await expect.poll(() => slow.store.calls.length, { timeout: 5000 }).toBe(1);
    const input = Math.ceil(Buffer.byteLength(body) / 4);
    expect(slow.store.calls[0]).toMatchObject({ httpStatus: 0, usageKnown: false, inputTokens: input, outputTokens: 1, costMicros: 3 * input + 15 });
  } finally {
    await slow.close();
  }
});

it("its job's attempt ending (the gateway cuts its calls) still aborts a non-streamed call upstream: recorded as an estimate (input by size, output 1), charged", async () => {
  const { gw: slow, got, gone } = await silentUpstream(6);
  try {
    const body = JSON.stringify({ model: 'claude-sonnet-4-5', max_tokens: 100, messages: [{ role: 'user', content: 'x'.repeat(400) }] });
    const sent = slow.post('/v1/messages', body);
    await expect.poll(got, { timeout: 5000 }).toBe(true);
    expect(slow.app.abortJob(6)).toBe(1);
    const res = await sent;
    expect(res.status).toBe(502);
    expect(((await res.json()) as { error: { message: string } }).error.message).toMatch(/its job's attempt ended/);
    await expect.poll(gone, { timeout: 5000 }).toBe(true);
    // input ⌈bytes / 4⌉, output 1, at sonnet-4-5's $3 / $15 per million: µ$ = 3 × input + 15
    const input = Math.ceil(Buffer.byteLength(body) / 4);
    expect(slow.store.calls[0]).toMatchObject({ httpStatus: 0, usageKnown: false, inputTokens: input, outputTokens: 1, costMicros: 3 * input + 15 });
  } finally {
    await slow.close();
  }
});

it('a client that hangs up while the gateway waits out a 429 retry-after: the wait ends, no second upstream call, recorded as the 429 it got at $0 (no hang-up estimate)', async () => {
  // fresh-user finding: such a call was charged an estimate as if the upstream had worked on it
  let upstreamCalls = 0;
  const limited = await startGateway({
    upstream: () => (res) => {
      upstreamCalls += 1;
      res.writeHead(429, { 'content-type': 'application/json', 'retry-after': '5' });
      res.end(JSON.stringify({ type: 'error', error: { type: 'rate_limit_error', message: 'slow down' } }));
    },
    job: { token: TOKEN, id: 4, budgetMicros: 5_000_000 },
    config: { retry: { retries: 2, maxDelayMs: 10_000 } },
  });
  try {
    const ac = new AbortController();
    const sent = limited.post('/v1/messages', { model: 'claude-sonnet-4-5', max_tokens: 100, messages: [{ role: 'user', content: 'hi' }] }, { signal: ac.signal });
    await expect.poll(() => upstreamCalls, { timeout: 5000 }).toBe(1); // the gateway now waits 5 s
    ac.abort();
    await sent.catch(() => undefined);
    await expect.poll(() => limited.store.calls.length, { timeout: 3000 }).toBe(1); // well before the 5 s wait would end
    expect(limited.store.calls[0]).toMatchObject({ httpStatus: 429, usageKnown: true, inputTokens: 0, outputTokens: 0, costMicros: 0 });
    expect(limited.store.budgets.get(4)).toEqual({ limit: 5_000_000, spent: 0, reserved: 0 });
    await new Promise((r) => setTimeout(r, 200));
    expect(upstreamCalls).toBe(1);
  } finally {
    await limited.close();
  }
});

it('a client that hangs up on the last event of a complete stream, while the upstream holds the connection open: recorded with its reported usage, known (no estimate)', async () => {
  // fresh-user finding: recorded as an estimate, input from the request's size (37 instead of 6)
  const ev = (type: string, data: object) => `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;
  const held = await startGateway({
    upstream: () => (res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(ev('message_start', { message: { id: 'm', type: 'message', role: 'assistant', model: 'claude-sonnet-4-5', content: [], usage: { input_tokens: 6, output_tokens: 1 } } }));
      res.write(ev('message_delta', { delta: { stop_reason: 'end_turn' }, usage: { output_tokens: 500 } }));
      res.write(ev('message_stop', {}));
      setTimeout(() => res.end(), 2_000); // the connection stays open after the last event
    },
    job: { token: TOKEN, id: 5, budgetMicros: 5_000_000 },
  });
  try {
    const ac = new AbortController();
    const res = await held.post('/v1/messages', { model: 'claude-sonnet-4-5', max_tokens: 1000, stream: true, messages: [{ role: 'user', content: 'hi' }] }, { signal: ac.signal });
    const reader = res.body!.getReader();
    let text = '';
    while (!text.includes('message_stop')) text += new TextDecoder().decode((await reader.read()).value);
    ac.abort();
    await expect.poll(() => held.store.calls.length, { timeout: 5000 }).toBe(1);
    // 6 × 3 µ$ + 500 × 15 µ$ = 7,518 µ$
    expect(held.store.calls[0]).toMatchObject({ usageKnown: true, inputTokens: 6, outputTokens: 500, costMicros: 7_518 });
  } finally {
    await held.close();
  }
});

