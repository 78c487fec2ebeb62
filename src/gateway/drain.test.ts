/**
 * Gateway.drain (a stopping server's model calls, gateway.ts): from its start a new model call
 * gets a retryable 503 in its route's wire format, nothing reserved or sent upstream; the calls
 * already reserved are waited for until each is settled. Real HTTP, a held fake upstream, the
 * in-memory store. claude-sonnet-4-5: 10 input + 20 output tokens = 30 + 300 = 330 µ$.
 */
import { describe, expect, it } from 'vitest';
import { startGateway } from './test-server.js';
import type { FakeReply } from './test-upstream.js';

const MESSAGE = JSON.stringify({ id: 'm', type: 'message', role: 'assistant', model: 'claude-sonnet-4-5', content: [{ type: 'text', text: 'ok' }], usage: { input_tokens: 10, output_tokens: 20 } });

describe('Gateway.drain', () => {
  it('waits for the call in flight to be settled; a call made meanwhile gets 503, retryable, in its wire format, and reaches no upstream', async () => {
    let release!: (r: FakeReply) => void;
    const held = new Promise<FakeReply>((r) => (release = r));
    const gw = await startGateway({ job: { token: 'flj_drain_test_0123456789abcdefgh', id: 41, budgetMicros: 1_000_000 }, openai: 'openai-compatible', upstream: () => held });
    try {
      const first = gw.post('/v1/messages', { model: 'claude-sonnet-4-5', max_tokens: 100, messages: [{ role: 'user', content: 'hi' }] });
      while (gw.up.seen.length === 0) await new Promise((r) => setTimeout(r, 5));
      let drained = false;
      const drain = gw.app.drain(5000).then((d) => ((drained = true), d));

      const late = await gw.post('/v1/messages', { model: 'claude-sonnet-4-5', max_tokens: 100, messages: [{ role: 'user', content: 'late' }] });
      expect([late.status, late.headers.get('x-should-retry'), late.headers.get('retry-after'), late.headers.get('connection'), await late.json()]).toEqual([
        503,
        'true',
        '5',
        'close', // the retry comes on a new connection, to the server once it is back
        { type: 'error', error: { type: 'api_error', message: 'the gateway is shutting down: try again shortly' } },
      ]);
      const lateChat = await gw.post('/v1/chat/completions', { model: 'gpt-4o', max_tokens: 100, messages: [{ role: 'user', content: 'late' }] });
      expect([lateChat.status, lateChat.headers.get('x-should-retry'), await lateChat.json()]).toEqual([
        503,
        'true',
        { error: { message: 'the gateway is shutting down: try again shortly', type: 'server_error', param: null, code: null } },
      ]);
      expect(gw.up.seen).toHaveLength(1);
      expect(drained).toBe(false);

      release({ body: MESSAGE });
      expect((await first).status).toBe(200);
      expect(await drain).toEqual({ open: 1, aborted: 0 });
      // the one call served, recorded at its cost; the late ones left no row (no job's spend)
      expect(gw.store.calls.map((c) => c.costMicros)).toEqual([330]);
    } finally {
      await gw.close();
    }
  });

  it('a call waiting for budget (calls in flight hold it) stops waiting at once: 503, recorded as refused, never sent upstream', async () => {
    let release!: (r: FakeReply) => void;
    const held = new Promise<FakeReply>((r) => (release = r));
    // 330 µ$ spent by the first call; its worst case (max_tokens 100: 100 × 15 + input) fits the
    // budget once, not twice: the second waits for the first to settle (M2, budget-wait.ts)
    const gw = await startGateway({ job: { token: 'flj_drain_test_wait_0123456789abc', id: 43, budgetMicros: 3_000 }, config: { budgetWaitMs: 60_000 }, upstream: () => held });
    try {
      const first = gw.post('/v1/messages', { model: 'claude-sonnet-4-5', max_tokens: 100, messages: [{ role: 'user', content: 'hi' }] });
      while (gw.up.seen.length === 0) await new Promise((r) => setTimeout(r, 5));
      let waiterDone = false;
      const waiter = gw.post('/v1/messages', { model: 'claude-sonnet-4-5', max_tokens: 100, messages: [{ role: 'user', content: 'waits' }] }).then((r) => ((waiterDone = true), r));
      await new Promise((r) => setTimeout(r, 200));
      expect(waiterDone).toBe(false);

      const t0 = Date.now();
      const drain = gw.app.drain(5000);
      const w = await waiter;
      expect(Date.now() - t0).toBeLessThan(1000);
      expect([w.status, w.headers.get('x-should-retry'), ((await w.json()) as { error: { message: string } }).error.message]).toEqual([503, 'true', 'the gateway is shutting down: try again shortly']);
      release({ body: MESSAGE });
      expect((await first).status).toBe(200);
      expect(await drain).toEqual({ open: 1, aborted: 0 });
      expect(gw.up.seen).toHaveLength(1);
      expect(gw.store.calls.map((c) => [c.httpStatus, c.refused ?? null, c.costMicros])).toEqual([
        [503, 'shutting_down', 0],
        [200, null, 330],
      ]);
    } finally {
      await gw.close();
    }
  });

  it('hurryDrain ends the grace period: the call still running is aborted at once and recorded with an estimate', async () => {
    const gw = await startGateway({ job: { token: 'flj_drain_test_hurry_0123456789ab', id: 44, budgetMicros: 1_000_000 }, upstream: () => new Promise<FakeReply>(() => undefined) });
    try {
      const call = gw.post('/v1/messages', { model: 'claude-sonnet-4-5', max_tokens: 100, messages: [{ role: 'user', content: 'hangs' }] }).then(
        (r) => r.status,
        () => 'dropped',
      );
      while (gw.up.seen.length === 0) await new Promise((r) => setTimeout(r, 5));
      const t0 = Date.now();
      const drain = gw.app.drain(60_000);
      await new Promise((r) => setTimeout(r, 50));
      gw.app.hurryDrain();
      expect(await drain).toEqual({ open: 1, aborted: 1 });
      expect(Date.now() - t0).toBeLessThan(2000);
      await call;
      expect(gw.store.calls.map((c) => [c.usageKnown, c.costMicros > 0])).toEqual([[false, true]]);
    } finally {
      await gw.close();
    }
  });

  it('hurryDrain before the drain began (a second Ctrl-C while `up` still stops its runner): the drain waits for nothing', async () => {
    const gw = await startGateway({ job: { token: 'flj_drain_test_early_0123456789ab', id: 45, budgetMicros: 1_000_000 }, upstream: () => new Promise<FakeReply>(() => undefined) });
    try {
      const call = gw.post('/v1/messages', { model: 'claude-sonnet-4-5', max_tokens: 100, messages: [{ role: 'user', content: 'hangs' }] }).then(
        (r) => r.status,
        () => 'dropped',
      );
      while (gw.up.seen.length === 0) await new Promise((r) => setTimeout(r, 5));
      gw.app.hurryDrain();
      const t0 = Date.now();
      expect(await gw.app.drain(60_000)).toEqual({ open: 1, aborted: 1 });
      expect(Date.now() - t0).toBeLessThan(2000);
      await call;
      expect(gw.store.calls.map((c) => [c.usageKnown, c.costMicros > 0])).toEqual([[false, true]]);
    } finally {
      await gw.close();
    }
  });

  it('a stream that ends during the drain reaches its client whole before the connections close (its call settles just before its last chunk)', async () => {
    const events = [
      { type: 'message_start', message: { id: 'm', type: 'message', role: 'assistant', model: 'claude-sonnet-4-5', content: [], usage: { input_tokens: 10, output_tokens: 1 } } },
      { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } },
      { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'x'.repeat(64 * 1024) } },
      { type: 'content_block_stop', index: 0 },
      { type: 'message_delta', delta: { stop_reason: 'end_turn' }, usage: { output_tokens: 20 } },
      { type: 'message_stop' },
    ].map((e) => `event: ${e.type}\ndata: ${JSON.stringify(e)}\n\n`);
    const gw = await startGateway({
      job: { token: 'flj_drain_test_tail_0123456789abc', id: 44, budgetMicros: 1_000_000 },
      upstream: () => (res) => {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write(events.slice(0, 3).join(''));
        setTimeout(() => res.end(events.slice(3).join('')), 200);
      },
    });
    let closed = false;
    try {
      const res = await gw.post('/v1/messages', { model: 'claude-sonnet-4-5', max_tokens: 100, stream: true, messages: [{ role: 'user', content: 'hi' }] });
      expect(res.status).toBe(200);
      const text = res.text();
      // the server stops as `flotilla up` does: drain, then every connection closed
      expect(await gw.app.drain(5000)).toEqual({ open: 1, aborted: 0 });
      await gw.close();
      closed = true;
      expect(await text).toBe(events.join(''));
      expect(gw.store.calls.map((c) => c.costMicros)).toEqual([330]);
    } finally {
      if (!closed) await gw.close();
    }
  });

  it('with nothing in flight it returns at once', async () => {
    const gw = await startGateway({ job: { token: 'flj_drain_test_idle_0123456789abc', id: 42, budgetMicros: 1_000_000 } });
    try {
      const t0 = Date.now();
      expect(await gw.app.drain(5000)).toEqual({ open: 0, aborted: 0 });
      expect(Date.now() - t0).toBeLessThan(100);
    } finally {
      await gw.close();
    }
  });
});
