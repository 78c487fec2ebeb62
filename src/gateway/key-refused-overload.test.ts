/**
 * A key the provider refuses (401) beside a key answering 529 overloaded: the refused key's
 * attempt is one of the client call's retries (never more than 1 + retries upstream calls per
 * client call), so the overload got fewer retries than the policy allows; the 529 the gateway
 * gives up on then reaches the client as Anthropic sends it — status 529, error type
 * `overloaded_error`, no `x-should-retry: false` — and the harness (Claude Code retries a 529)
 * tries again, now without the refused key (skipped for KEY_REFUSED_SKIP_MS). A 529 that got
 * every retry on keys in service still ends with `x-should-retry: false` (the fixed total).
 * Real HTTP: the gateway in front of a fake Anthropic upstream counting calls per key.
 */
import { describe, expect, it } from 'vitest';
import { startGateway } from './test-server.js';
import type { FakeReply, SeenRequest } from './test-upstream.js';

const TOKEN = 'flj_keyoverload_0123456789abcdefgh';
const KEY_A = 'sk-ant-api03-refusedrefusedrefused-aaaa';
const KEY_B = 'sk-ant-api03-overloadedoverloaded-bbbb';
const RETRIES = 2;
const MSG = { model: 'claude-haiku-4-5', max_tokens: 100, messages: [{ role: 'user', content: 'hi' }] };
const OK = JSON.stringify({ id: 'm', type: 'message', role: 'assistant', model: 'claude-haiku-4-5', content: [{ type: 'text', text: 'ok' }], stop_reason: 'end_turn', usage: { input_tokens: 10, output_tokens: 5 } });
const OVERLOADED = JSON.stringify({ type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } });
const REFUSED = JSON.stringify({ type: 'error', error: { type: 'authentication_error', message: 'invalid x-api-key' } });

/** Key A always 401; key B 529 (no retry-after) for its first `overloads` calls, then 200. */
function upstream(overloads: number) {
  let bCalls = 0;
  return (r: SeenRequest): FakeReply => {
    if (r.headers['x-api-key'] === KEY_A) return { status: 401, body: REFUSED };
    bCalls += 1;
    return bCalls <= overloads ? { status: 529, body: OVERLOADED } : { body: OK };
  };
}

async function start(keys: string, overloads: number) {
  return startGateway({
    job: { token: TOKEN, budgetMicros: 50_000_000 },
    upstream: upstream(overloads),
    config: { anthropicApiKey: keys, retry: { retries: RETRIES, baseMs: 1, maxDelayMs: 1_000 } },
  });
}

/** One client call: status, the x-should-retry header, the error type, and the upstream calls it made. */
async function call(gw: Awaited<ReturnType<typeof start>>) {
  const before = gw.up.seen.length;
  const res = await gw.post('/v1/messages', MSG);
  const json = (await res.json()) as { error?: { type?: string } };
  return { status: res.status, shouldRetry: res.headers.get('x-should-retry'), type: json.error?.type ?? null, upstreamCalls: gw.up.seen.length - before, keys: gw.up.seen.slice(before).map((s) => (s.headers['x-api-key'] === KEY_A ? 'A' : 'B')) };
}

describe('a refused key beside an overloaded one', () => {
  it('the 529 after the retries reaches the client retryable (529, overloaded_error, no x-should-retry: false); the harness retry then succeeds', async () => {
    const gw = await start(`${KEY_A},${KEY_B}`, 2);
    try {
      // A refused (failover at once), B 529, B 529: 3 = 1 + retries upstream calls, retries used up
      const first = await call(gw);
      expect(first).toEqual({ status: 529, shouldRetry: null, type: 'overloaded_error', upstreamCalls: 1 + RETRIES, keys: ['A', 'B', 'B'] });
      // the harness retries: A is skipped now, B answers
      const second = await call(gw);
      expect(second).toEqual({ status: 200, shouldRetry: null, type: null, upstreamCalls: 1, keys: ['B'] });
      // one ledger row per client call: the 529 free, the 200 at 10 × 1 + 5 × 5 = 35 µ$ (claude-haiku-4-5 $1 / $5 per MTok)
      expect(gw.store.calls.map((c) => [c.httpStatus, c.costMicros])).toEqual([[529, 0], [200, 35]]);
    } finally {
      await gw.close();
    }
  });

  it('an overload that got every retry on keys in service still says x-should-retry: false (the fixed total)', async () => {
    const gw = await start(`${KEY_A},${KEY_B}`, 5);
    try {
      expect(await call(gw)).toMatchObject({ status: 529, shouldRetry: null, upstreamCalls: 1 + RETRIES, keys: ['A', 'B', 'B'] });
      // A skipped: B gets all 1 + retries calls, 529 each (B calls 3, 4, 5)
      expect(await call(gw)).toEqual({ status: 529, shouldRetry: 'false', type: 'overloaded_error', upstreamCalls: 1 + RETRIES, keys: ['B', 'B', 'B'] });
    } finally {
      await gw.close();
    }
  });

  it('one key only, overloaded: x-should-retry: false after 1 + retries calls, as before', async () => {
    const gw = await start(KEY_B, 10);
    try {
      expect(await call(gw)).toEqual({ status: 529, shouldRetry: 'false', type: 'overloaded_error', upstreamCalls: 1 + RETRIES, keys: ['B', 'B', 'B'] });
    } finally {
      await gw.close();
    }
  });
});
