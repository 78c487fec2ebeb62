import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { createGateway } from './gateway.js';
import { MemoryGatewayStore } from './memory-store.js';
import { loadPriceTable } from './prices.js';
import { KeyRing, retryAfterMs, withRetries } from './retry.js';
import { listen } from './test-server.js';

const TOKEN = 'flj_retry_0123456789abcdefghijklmn';
const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

const ok = JSON.stringify({ id: 'm', type: 'message', role: 'assistant', model: 'claude-haiku-4-5', content: [{ type: 'text', text: 'ok' }], stop_reason: 'end_turn', usage: { input_tokens: 10, output_tokens: 5 } });

describe('upstream retries', () => {
  it('a 529 storm (first 20 upstream calls, no retry-after) with 2 keys: all 20 client calls succeed, upstream calls ≤ 20 × (1 + retries), both keys used', async () => {
    let calls = 0;
    const storm: Array<() => void> = [];
    const keys = new Map<string, number>();
    const up: Server = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        calls += 1;
        const k = String(req.headers['x-api-key']);
        keys.set(k, (keys.get(k) ?? 0) + 1);
        if (calls <= 20) {
          // The storm: the first 20 calls all get 529 (answered together once all 20 are in).
          storm.push(() => {
            res.writeHead(529, { 'content-type': 'application/json' });
            res.end(JSON.stringify({ type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } }));
          });
          if (storm.length === 20) storm.forEach((f) => f());
          return;
        }
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(ok);
      });
    });
    await new Promise<void>((r) => up.listen(0, '127.0.0.1', r));
    cleanups.push(() => new Promise((r) => up.close(() => r())));
    const store = new MemoryGatewayStore();
    store.addJob(TOKEN, { budgetMicros: 100_000_000 });
    const RETRIES = 2;
    const app = createGateway({
      store,
      config: { provider: 'anthropic', anthropicApiKey: 'sk-a, sk-b', anthropicBaseUrl: `http://127.0.0.1:${(up.address() as AddressInfo).port}`, prices: loadPriceTable(), retry: { retries: RETRIES } }, // default backoff: 250 ms × 2^n ± 50 %
      scriptFor: async () => null,
    });
    const gw = await listen(app.fetch);
    cleanups.push(() => gw.close());
    const results = await Promise.all(
      Array.from({ length: 20 }, () =>
        fetch(gw.url + '/v1/messages', { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': TOKEN }, body: JSON.stringify({ model: 'claude-haiku-4-5', max_tokens: 100, messages: [{ role: 'user', content: 'hi' }] }) }).then((r) => r.status),
      ),
    );
    expect(results).toEqual(Array(20).fill(200));
    expect(calls).toBeLessThanOrEqual(20 * (1 + RETRIES));
    expect([...keys.keys()].sort()).toEqual(['sk-a', 'sk-b']);
    // one row per client call, none billed twice: 20 × (10 × 1 + 5 × 5) = 20 × 35 µ$
    expect(store.calls).toHaveLength(20);
    expect(store.budgets.get(1)?.spent).toBe(20 * 35);
  });

  it('a retry goes to another key than the one that just failed, whatever other calls took from the shared ring meanwhile (fresh tester: all three attempts on the overloaded key)', async () => {
    const ring = new KeyRing(['k-a', 'k-b']);
    const keysOf: string[][] = [[], [], []];
    // key a answers 529, key b 200; each attempt yields, so the three calls interleave on the ring
    const attempt = (n: number) => async (key: string) => {
      keysOf[n]!.push(key);
      await new Promise((r) => setImmediate(r));
      return new Response('{}', { status: key === 'k-a' ? 529 : 200 });
    };
    const policy = { retries: 2, baseMs: 1, maxDelayMs: 10 };
    const replies = await Promise.all([0, 1, 2].map((n) => withRetries(attempt(n), ring, policy, { sleep: async () => undefined })));
    expect(replies.map((r) => r.response.status)).toEqual([200, 200, 200]);
    // first attempts round-robin a, b, a; each retry after a 529 on a goes to b at once
    expect(keysOf).toEqual([['k-a', 'k-b'], ['k-b'], ['k-a', 'k-b']]);
  });

  it('overloads on two keys, then the third refused: the overload is the reply, retryable, not the refusal (fresh tester: the job was told an admin must fix the key)', async () => {
    const status: Record<string, number> = { 'k-a': 529, 'k-b': 529, 'k-c': 401 };
    const keys: string[] = [];
    const res = await withRetries(async (key) => (keys.push(key), new Response(`{"key":"${key}"}`, { status: status[key]! })), new KeyRing(['k-a', 'k-b', 'k-c']), { retries: 2, baseMs: 1, maxDelayMs: 10 });
    expect([keys, res.calls, res.response.status, res.response.headers.get('x-should-retry'), await res.response.text()]).toEqual([['k-a', 'k-b', 'k-c'], 3, 529, null, '{"key":"k-b"}']);
    // every key the call tried refused: the refusal stays the reply
    const refusing = await withRetries(async () => new Response('{}', { status: 401 }), new KeyRing(['k-a', 'k-b']), { retries: 2, baseMs: 1, maxDelayMs: 10 });
    expect(refusing.response.status).toBe(401);
  });

  it('after every key was refused, a key that serves again is back in service: later calls skip the one still refused (fresh tester: each call went to it first for a minute)', async () => {
    const ring = new KeyRing(['k-a', 'k-b']);
    const policy = { retries: 2, baseMs: 1, maxDelayMs: 10 };
    await withRetries(async () => new Response('{}', { status: 401 }), ring, policy);
    const seen: string[] = [];
    for (let call = 0; call < 5; call++) {
      const res = await withRetries(async (key) => (seen.push(key), new Response('{}', { status: key === 'k-a' ? 401 : 200 })), ring, policy);
      expect(res.response.status).toBe(200);
    }
    // at most one more attempt on the refused key (the first call's, when the ring came to it first)
    expect(seen.filter((k) => k === 'k-a').length).toBeLessThanOrEqual(1);
    expect(seen.filter((k) => k === 'k-b')).toHaveLength(5);
  });

  it('a rate-limit 429 asking for a wait rests its key for new calls; a 529 asking for one does not (the overload is the provider\'s)', async () => {
    for (const status of [429, 529]) {
      const ring = new KeyRing(['k-a', 'k-b', 'k-c'], { now: () => 1_000_000 });
      const keys: string[][] = [];
      for (let call = 0; call < 3; call++) {
        const mine: string[] = [];
        keys.push(mine);
        const res = await withRetries(
          async (key) => (mine.push(key), new Response('{}', { status: key === 'k-a' && call === 0 ? status : 200, headers: { 'retry-after': '2' } })),
          ring,
          { retries: 2, baseMs: 10, maxDelayMs: 10_000 },
          { sleep: async () => undefined },
        );
        expect(res.response.status).toBe(200);
      }
      // call 1: k-a asks for 2 s, its retry goes to k-b; the ring's next are k-c, then k-a again
      // unless k-a rests (the clock has not moved: its 2 s are not over)
      expect(keys).toEqual(status === 429 ? [['k-a', 'k-b'], ['k-c'], ['k-b']] : [['k-a', 'k-b'], ['k-c'], ['k-a']]);
    }
  });

  it('a wait past the longest we hold a call for, from one key, sends the call at once to a key it has not tried (fresh tester: half the calls failed beside a healthy key)', async () => {
    const ring = new KeyRing(['k-a', 'k-b']);
    const keys: string[] = [];
    const slept: number[] = [];
    const res = await withRetries(
      async (key) => (keys.push(key), new Response('{}', { status: key === 'k-a' ? 429 : 200, headers: key === 'k-a' ? { 'retry-after': '30' } : {} })),
      ring,
      { retries: 2, baseMs: 10, maxDelayMs: 10_000 },
      { sleep: async (ms: number) => void slept.push(ms) },
    );
    expect([res.response.status, keys, slept]).toEqual([200, ['k-a', 'k-b'], []]);
    // every key asks for it: the reply goes as sent, retry-after kept, for the client to wait out
    const both = new KeyRing(['k-a', 'k-b']);
    const seen: string[] = [];
    const all = await withRetries(async (key) => (seen.push(key), new Response('{}', { status: 429, headers: { 'retry-after': '30' } })), both, { retries: 2, baseMs: 10, maxDelayMs: 10_000 }, { sleep: async () => undefined });
    expect([seen.length, all.response.status, all.response.headers.get('retry-after'), all.response.headers.get('x-should-retry')]).toEqual([2, 429, '30', null]);
  });

  it('a fixed total: N retries = N+1 calls, then the reply says x-should-retry: false; retry-after is honoured; no retry where the upstream forbids it', async () => {
    const waits: number[] = [];
    const sleep = async (ms: number) => void waits.push(ms);
    let n = 0;
    const r529 = () => new Response('{}', { status: 529, headers: { 'retry-after': '2' } });
    const a = await withRetries(async () => (n++, r529()), new KeyRing(['k']), { retries: 3, baseMs: 10, maxDelayMs: 10_000 }, { sleep });
    expect(n).toBe(4);
    expect(a.calls).toBe(4);
    expect(a.response.status).toBe(529);
    expect(a.response.headers.get('x-should-retry')).toBe('false');
    expect(waits).toEqual([2000, 2000, 2000]);
    n = 0;
    const b = await withRetries(async () => (n++, new Response('{}', { status: 429, headers: { 'x-should-retry': 'false' } })), new KeyRing([]), { retries: 3, baseMs: 10, maxDelayMs: 10_000 }, { sleep });
    expect([n, b.response.status]).toEqual([1, 429]);
    n = 0;
    const c = await withRetries(async () => (n++, new Response('{}', { status: 400 })), new KeyRing([]), { retries: 3, baseMs: 10, maxDelayMs: 10_000 }, { sleep });
    expect([n, c.response.status, c.response.headers.get('x-should-retry')]).toEqual([1, 400, null]);
    // a retry-after longer than the cap ends the retries at once; on the first reply it goes as
    // sent, retry-after kept, for the harness to wait out (one upstream call: nothing multiplies)
    n = 0;
    const long = await withRetries(async () => (n++, new Response('{}', { status: 429, headers: { 'retry-after': '60' } })), new KeyRing([]), { retries: 3, baseMs: 10, maxDelayMs: 10_000 }, { sleep });
    expect([n, long.response.headers.get('x-should-retry'), long.response.headers.get('retry-after')]).toEqual([1, null, '60']);
    // after a retry of ours, the same long wait with retries left goes as sent too (it was
    // marked never to be retried: a fresh tester)...
    n = 0;
    const later = await withRetries(async () => new Response('{}', { status: 429, headers: { 'retry-after': n++ === 0 ? '1' : '60' } }), new KeyRing([]), { retries: 3, baseMs: 10, maxDelayMs: 10_000 }, { sleep });
    expect([n, later.response.headers.get('x-should-retry'), later.response.headers.get('retry-after')]).toEqual([2, null, '60']);
    // ...but on the last allowed call it ends with x-should-retry: false (the fixed total: N+1 calls made)
    n = 0;
    const last = await withRetries(async () => new Response('{}', { status: 429, headers: { 'retry-after': n++ < 3 ? '1' : '60' } }), new KeyRing([]), { retries: 3, baseMs: 10, maxDelayMs: 10_000 }, { sleep });
    expect([n, last.response.headers.get('x-should-retry')]).toEqual([4, 'false']);
    // retries 0 (FLOTILLA_GATEWAY_RETRIES=0): the admin asked for one call and no retry on top
    n = 0;
    const none = await withRetries(async () => (n++, new Response('{}', { status: 429, headers: { 'retry-after': '60' } })), new KeyRing([]), { retries: 0, baseMs: 10, maxDelayMs: 10_000 }, { sleep });
    expect([n, none.response.headers.get('x-should-retry')]).toEqual([1, 'false']);
    expect(retryAfterMs(new Headers({ 'retry-after-ms': '150' }))).toBe(150);
    expect(retryAfterMs(new Headers({ 'retry-after': new Date(Date.now() + 5000).toUTCString() }), Date.now())).toBeGreaterThan(3000);
  });

  it('retry-after: 0 (or retry-after-ms: 0) is taken for none, as the Anthropic and OpenAI SDKs take it: the usual backoff (it retried at once, 3 calls in 10 ms)', async () => {
    for (const headers of [{ 'retry-after': '0' }, { 'retry-after-ms': '0' }] as Record<string, string>[]) {
      const waits: number[] = [];
      let n = 0;
      await withRetries(async () => (n++, new Response('{}', { status: 529, headers })), new KeyRing(['k']), { retries: 2, baseMs: 100, maxDelayMs: 10_000 }, { sleep: async (ms: number) => void waits.push(ms) });
      expect(n).toBe(3);
      // baseMs × 2^i with ±50 % jitter: 50..150, then 100..300
      expect(waits).toHaveLength(2);
      expect(waits[0]).toBeGreaterThanOrEqual(50);
      expect(waits[0]).toBeLessThanOrEqual(150);
      expect(waits[1]).toBeGreaterThanOrEqual(100);
      expect(waits[1]).toBeLessThanOrEqual(300);
    }
  });

  it('retry-after: delay-seconds or an HTTP-date (RFC 9110 §10.2.3); a negative number is neither, and counts as absent', () => {
    const now = Date.parse('2026-12-03T12:00:00Z');
    const ra = (v: string) => retryAfterMs(new Headers({ 'retry-after': v }), now);
    expect(ra('3')).toBe(3000);
    expect(ra('3.5')).toBe(3500);
    expect(ra('0')).toBe(0);
    expect(ra('Thu, 03 Dec 2026 12:00:07 GMT')).toBe(7000);
    expect(ra('Thu, 03 Dec 2026 11:00:00 GMT')).toBe(0); // a date past: no wait
    // Date.parse reads "-5" as the year -5 (a date past: no wait, so every retry went out at once)
    expect(ra('Thursday, 03-Dec-26 12:00:07 GMT')).toBe(7000); // rfc850
    // two headers joined (`5, 5`, `-5, 1`) and `- 5` were read as dates of 2001: no wait at all
    for (const v of ['-5', '-1', ' -0.5 ', '-1e3', 'soon', '', '- 5', '5, 5', '-5, 1', '2026-12-03T12:00:07Z']) expect(ra(v), v).toBeNull();
    expect(retryAfterMs(new Headers({ 'retry-after-ms': '-20', 'retry-after': '2' }), now)).toBe(2000);
  });
});
