/**
 * Several upstream keys for one provider (ANTHROPIC_API_KEY / OPENAI_API_KEY = a,b): when the
 * provider refuses one key (401/403), the same client call fails over at once to another key,
 * as one of its retries (N retries = at most N+1 upstream calls: with retries 0 there is no
 * failover), never to the same key twice; the refused key is skipped by the ring for
 * KEY_REFUSED_SKIP_MS (60 s); only when every key the call tried was refused does the client get
 * upstream-auth.ts's 500. A 529 does not take a key out of service. The admin's log names the
 * refused key's position, never its text. Real HTTP: configuration read from an environment as
 * `flotilla up` does (the default retries), a fake upstream accepting only some keys and
 * counting requests per key, a real SQLite store.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import type { Logger } from '../core/log.js';
import { openSqliteStore } from '../store/open.js';
import type { Store } from '../store/types.js';
import { loadGatewayConfig } from './config.js';
import { DEFAULT_RETRY, KEY_REFUSED_SKIP_MS, KeyRing } from './retry.js';
import { startGateway, type TestGateway } from './test-server.js';
import { runningJob } from './test-stores.js';
import { fakeUpstream, type FakeReply, type SeenRequest } from './test-upstream.js';

const TOKEN = 'flj_keyfailover_0123456789abcdefgh';
const ANT_BAD = 'sk-ant-api03-revokedrevokedrevoked-1111';
const ANT_BAD2 = 'sk-ant-api03-expiredexpiredexpired-2222';
const ANT_GOOD = 'sk-ant-api03-goodgoodgoodgoodgood-3333';
const OAI_BAD = 'sk-proj-revokedrevokedrevokedrevo-4444';
const OAI_GOOD = 'sk-proj-goodgoodgoodgoodgoodgood-5555';
const GOOD = new Set([ANT_GOOD, OAI_GOOD]);

const ANT_OK = JSON.stringify({ id: 'm', type: 'message', role: 'assistant', model: 'claude-haiku-4-5', content: [{ type: 'text', text: 'ok' }], stop_reason: 'end_turn', usage: { input_tokens: 10, output_tokens: 5 } });
const OAI_OK = JSON.stringify({ id: 'c', object: 'chat.completion', model: 'gpt-4o', choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }], usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 } });
const MSG = { model: 'claude-haiku-4-5', max_tokens: 100, messages: [{ role: 'user', content: 'hi' }] };
const CHAT = { model: 'gpt-4o', max_tokens: 100, messages: [{ role: 'user', content: 'hi' }] };

/** The key an upstream request carried (x-api-key, or the Bearer credential). */
const keyOf = (r: SeenRequest) => String(r.headers['x-api-key'] ?? String(r.headers.authorization ?? '').replace(/^Bearer /, ''));
/** How many requests the upstream got with `key`. */
const seenWith = (seen: SeenRequest[], key: string) => seen.filter((r) => keyOf(r) === key).length;

/** An upstream accepting only the GOOD keys; any other key gets `status` with the key echoed, as the real APIs do. */
function onlyGood(status = 401) {
  return (r: SeenRequest): FakeReply => {
    const key = keyOf(r);
    const anthropic = r.url.startsWith('/v1/messages');
    if (GOOD.has(key)) return { body: anthropic ? ANT_OK : OAI_OK };
    return { status, body: JSON.stringify(anthropic ? { type: 'error', error: { type: 'authentication_error', message: `invalid x-api-key: ${key}` } } : { error: { message: `Incorrect API key provided: ${key}`, type: 'invalid_request_error', code: 'invalid_api_key' } }) };
  };
}

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

interface Started {
  gw: TestGateway<Store>;
  file: string;
  warns: Array<{ msg: string; fields: Record<string, unknown> }>;
}

/** The gateway over a SQLite store, configured from `env` (+ the upstream's URLs) as `flotilla up` reads it. */
async function start(env: Record<string, string>, reply: (r: SeenRequest) => FakeReply): Promise<Started> {
  const dir = mkdtempSync(join(tmpdir(), 'flotilla-key-failover-'));
  const file = join(dir, 'flotilla.db');
  const store = await openSqliteStore(file);
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  cleanups.push(() => store.close());
  const up = await fakeUpstream(reply);
  cleanups.push(() => up.close());
  await runningJob(store, TOKEN, { budgetMicros: 50_000_000 });
  const loaded = loadGatewayConfig({ ...env, ANTHROPIC_BASE_URL: up.url, OPENAI_BASE_URL: up.url + '/v1' });
  const warns: Started['warns'] = [];
  const log: Logger = { debug: () => undefined, info: () => undefined, warn: (m, f = {}) => void warns.push({ msg: m, fields: f }), error: () => undefined, child: () => log };
  const gw = await startGateway<Store>({
    store,
    job: { token: TOKEN },
    upstream: up,
    // retry as loaded (absent unless FLOTILLA_GATEWAY_RETRIES is set: the gateway's default)
    config: { ...loaded, retry: loaded.retry, modelProviders: [{ pattern: 'claude-*', provider: 'anthropic' }, { pattern: 'gpt-*', provider: 'openai' }] },
    log,
  });
  cleanups.push(() => gw.close());
  return { gw, file, warns };
}

/** The ledger rows of the SQLite file at `file`, oldest first. */
function rows(file: string): Array<{ api: string; http_status: number; cost_micros: number }> {
  const db = new BetterSqlite3(file, { readonly: true });
  try {
    return db.prepare('select api, http_status, cost_micros from model_calls order by id').all() as Array<{ api: string; http_status: number; cost_micros: number }>;
  } finally {
    db.close();
  }
}

describe('a provider refusing one of several upstream keys', () => {
  it('the default retries let a 2-key ring fail over (FLOTILLA_GATEWAY_RETRIES unset → 2)', () => {
    const loaded = loadGatewayConfig({ ANTHROPIC_API_KEY: `${ANT_BAD},${ANT_GOOD}` });
    expect({ ...DEFAULT_RETRY, ...loaded.retry }.retries).toBe(2);
    expect(KEY_REFUSED_SKIP_MS).toBe(60_000);
  });

  it.each([401, 403])('upstream %i to one key of two: 10 calls per route all 200; the bad key sent once (skipped for 60 s); logged by position, no key text', async (status) => {
    const { gw, file, warns } = await start({ ANTHROPIC_API_KEY: `${ANT_BAD},${ANT_GOOD}`, OPENAI_API_KEY: `${OAI_BAD}, ${OAI_GOOD}` }, onlyGood(status));
    const statuses: number[] = [];
    for (let i = 0; i < 10; i++) {
      for (const [path, body] of [['/v1/messages', MSG], ['/v1/chat/completions', CHAT]] as const) {
        const res = await gw.post(path, body);
        await res.arrayBuffer();
        statuses.push(res.status);
      }
    }
    expect(statuses).toEqual(Array(20).fill(200));
    // the bad key: refused once, then out of the ring for the rest of the (60 s) window
    expect([seenWith(gw.up.seen, ANT_BAD), seenWith(gw.up.seen, ANT_GOOD)]).toEqual([1, 10]);
    expect([seenWith(gw.up.seen, OAI_BAD), seenWith(gw.up.seen, OAI_GOOD)]).toEqual([1, 10]);
    expect(gw.up.seen).toHaveLength(22);
    // one row per client call, each served once
    const ledger = rows(file);
    expect(ledger.map((r) => [r.api, r.http_status])).toEqual(Array.from({ length: 10 }, () => [['anthropic-messages', 200], ['openai-chat', 200]]).flat());
    // the admin learns which key (by position, 1 of 2) of which setting, never the key itself
    expect(warns.map((w) => [w.fields.provider, w.fields.key, w.fields.keys, w.fields.status, String(w.fields.setting).split(' ')[0]])).toEqual([
      ['anthropic', 1, 2, status, 'ANTHROPIC_API_KEY'],
      ['openai', 1, 2, status, 'OPENAI_API_KEY'],
    ]);
    expect(warns[0]!.msg).toContain('skipped for 60 s');
    expect(JSON.stringify(warns)).not.toMatch(/sk-|1111|4444|3333|5555/);
  });

  it('a ring of only refused keys: the 500 naming the setting, each key tried once in the call; every key skipped → all used again', async () => {
    const { gw, file } = await start({ ANTHROPIC_API_KEY: `${ANT_BAD},${ANT_BAD2}` }, onlyGood(401));
    for (let call = 1; call <= 2; call++) {
      const res = await gw.post('/v1/messages', MSG);
      const json = (await res.json()) as { error: { type: string; message: string } };
      expect([res.status, res.headers.get('x-should-retry'), json.error.type]).toEqual([500, 'false', 'api_error']);
      expect(json.error.message).toContain('an admin must fix ANTHROPIC_API_KEY');
      // both keys, once each, in this call (2 of the 3 upstream calls the default retries allow)
      expect([seenWith(gw.up.seen, ANT_BAD), seenWith(gw.up.seen, ANT_BAD2)]).toEqual([call, call]);
    }
    expect(rows(file).map((r) => [r.http_status, r.cost_micros])).toEqual([[401, 0], [401, 0]]);
  });

  it('retries 0 (FLOTILLA_GATEWAY_RETRIES=0): no failover, the call gets the 500; the next call skips the refused key', async () => {
    const { gw } = await start({ ANTHROPIC_API_KEY: `${ANT_BAD},${ANT_GOOD}`, FLOTILLA_GATEWAY_RETRIES: '0' }, onlyGood(401));
    const got: number[] = [];
    for (let i = 0; i < 4; i++) {
      const res = await gw.post('/v1/messages', MSG);
      await res.arrayBuffer();
      got.push(res.status);
    }
    expect(got).toEqual([500, 200, 200, 200]);
    expect(gw.up.seen.map(keyOf)).toEqual([ANT_BAD, ANT_GOOD, ANT_GOOD, ANT_GOOD]);
  });

  it('a 529 on one key does not take it out of service: retried on the other key, then both keys keep rotating', async () => {
    let first = true;
    const { gw } = await start({ ANTHROPIC_API_KEY: `${ANT_GOOD},${ANT_BAD}` }, () => {
      if (first) {
        first = false;
        return { status: 529, headers: { 'content-type': 'application/json', 'retry-after-ms': '0' }, body: JSON.stringify({ type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } }) };
      }
      return { body: ANT_OK };
    });
    for (let i = 0; i < 3; i++) {
      const res = await gw.post('/v1/messages', MSG);
      await res.arrayBuffer();
      expect(res.status).toBe(200);
    }
    // call 1: key 1 (529) then key 2; calls 2 and 3: key 1 again, then key 2
    expect(gw.up.seen.map(keyOf)).toEqual([ANT_GOOD, ANT_BAD, ANT_GOOD, ANT_BAD]);
  });
});

describe("a key whose account is out of credit, and OpenAI's rate limits", () => {
  /** OPENAI: the BAD key's account has no quota (429 insufficient_quota); the GOOD key's serves. */
  const quota = (r: SeenRequest): FakeReply =>
    GOOD.has(keyOf(r)) ? { body: OAI_OK } : { status: 429, body: JSON.stringify({ error: { message: 'You exceeded your current quota', type: 'insufficient_quota', param: null, code: 'insufficient_quota' } }) };

  it('a 429 insufficient_quota on one key fails over to the other at once, and the key is skipped after (another key may be another account)', async () => {
    const { gw, warns } = await start({ OPENAI_API_KEY: `${OAI_BAD},${OAI_GOOD}` }, quota);
    for (let i = 0; i < 4; i++) expect((await gw.post('/v1/chat/completions', CHAT)).status).toBe(200);
    expect([seenWith(gw.up.seen, OAI_BAD), seenWith(gw.up.seen, OAI_GOOD)]).toEqual([1, 4]);
    expect(warns.map((w) => [w.fields.key, w.fields.status])).toEqual([[1, 429]]);
  });

  it("Anthropic's 400 \"credit balance is too low\" on one key fails over to the other at once; any other 400 reaches the client as sent, on one key", async () => {
    // Anthropic answers an account without credit 400 invalid_request_error (not only its documented 402)
    const credit = (r: SeenRequest): FakeReply =>
      GOOD.has(keyOf(r))
        ? { body: ANT_OK }
        : { status: 400, body: JSON.stringify({ type: 'error', error: { type: 'invalid_request_error', message: 'Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing to upgrade or purchase credits.' } }) };
    const { gw, warns } = await start({ ANTHROPIC_API_KEY: `${ANT_BAD},${ANT_GOOD}` }, credit);
    for (let i = 0; i < 3; i++) expect((await gw.post('/v1/messages', MSG)).status).toBe(200);
    expect([seenWith(gw.up.seen, ANT_BAD), seenWith(gw.up.seen, ANT_GOOD)]).toEqual([1, 3]);
    expect(warns.map((w) => [w.fields.key, w.fields.status])).toEqual([[1, 400]]);
    // the job's own bad request (the same error type, other words, or quoting the words it
    // sent: fresh-user finding, an anthropic-beta value echoed took both keys out): passed on, no failover
    for (const message of ['max_tokens: Field required', 'Unexpected value(s) `credit balance is too low` for the `anthropic-beta` header. Please consult our documentation']) {
      const bad = { type: 'error', error: { type: 'invalid_request_error', message } };
      const { gw: gw2, warns: warns2 } = await start({ ANTHROPIC_API_KEY: `${ANT_GOOD},${ANT_BAD}` }, () => ({ status: 400, body: JSON.stringify(bad) }));
      const res = await gw2.post('/v1/messages', MSG);
      expect([res.status, await res.json()]).toEqual([400, bad]);
      expect([gw2.up.seen.length, warns2]).toEqual([1, []]);
    }
  });

  it('a 429 rate limit (no insufficient_quota) is retried after its retry-after, as the README says 429s are: 3 upstream calls, then x-should-retry: false', async () => {
    // fresh-user finding: the OpenAI routes passed every 429 straight on, unretried
    const limited = () => ({ status: 429, headers: { 'retry-after': '0' }, body: JSON.stringify({ error: { message: 'Rate limit reached for gpt-4o', type: 'requests', param: null, code: 'rate_limit_exceeded' } }) });
    const { gw } = await start({ OPENAI_API_KEY: OAI_GOOD }, limited);
    const res = await gw.post('/v1/chat/completions', CHAT);
    expect([res.status, res.headers.get('x-should-retry')]).toEqual([429, 'false']);
    expect(gw.up.seen).toHaveLength(DEFAULT_RETRY.retries + 1);
    // a rate limit that lifts: served on the retry
    let n = 0;
    const { gw: gw2 } = await start({ OPENAI_API_KEY: OAI_GOOD }, () => (n++ === 0 ? limited() : { body: OAI_OK }));
    expect((await gw2.post('/v1/chat/completions', CHAT)).status).toBe(200);
    expect(gw2.up.seen).toHaveLength(2);
  });

  it('529 on two keys, then the third refused: the client gets the retryable 529, not the 500 asking an admin to fix the key (fresh tester)', async () => {
    const OVER = JSON.stringify({ type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } });
    const third = 'sk-ant-api03-thirdthirdthirdthird-4444';
    const { gw, file, warns } = await start({ ANTHROPIC_API_KEY: `${ANT_GOOD},${ANT_BAD2},${third}` }, (r) => (keyOf(r) === third ? onlyGood(401)(r) : { status: 529, body: OVER }));
    const res = await gw.post('/v1/messages', MSG);
    expect([res.status, res.headers.get('x-should-retry'), await res.json()]).toEqual([529, null, JSON.parse(OVER)]);
    expect(gw.up.seen.map(keyOf)).toEqual([ANT_GOOD, ANT_BAD2, third]);
    expect(rows(file).map((r) => [r.http_status, r.cost_micros])).toEqual([[529, 0]]);
    // the refusal is still logged, by position
    expect(warns.map((w) => [w.fields.key, w.fields.keys, w.fields.status])).toEqual([[3, 3, 401]]);
  });

  it('a key answering 429 with retry-after 30 rests for it: 10 calls all 200, that key sent once (fresh tester: it took every other call first)', async () => {
    const limited = (r: SeenRequest): FakeReply =>
      keyOf(r) === ANT_BAD ? { status: 429, headers: { 'retry-after': '30' }, body: JSON.stringify({ type: 'error', error: { type: 'rate_limit_error', message: 'rate limited' } }) } : { body: ANT_OK };
    const { gw, file } = await start({ ANTHROPIC_API_KEY: `${ANT_BAD},${ANT_GOOD}` }, limited);
    const statuses: number[] = [];
    for (let i = 0; i < 10; i++) {
      const res = await gw.post('/v1/messages', MSG);
      await res.arrayBuffer();
      statuses.push(res.status);
    }
    expect(statuses).toEqual(Array(10).fill(200));
    expect([seenWith(gw.up.seen, ANT_BAD), seenWith(gw.up.seen, ANT_GOOD)]).toEqual([1, 10]);
    expect(rows(file).map((r) => r.http_status)).toEqual(Array(10).fill(200));
  });
});

describe('KeyRing', () => {
  it('a key rests for the wait its rate limit asked, at most KEY_REFUSED_SKIP_MS; a refusal\'s skip is never shortened', () => {
    let now = 1_000_000;
    const ring = new KeyRing(['a', 'b', 'c'], { now: () => now });
    ring.rest(0, 2_000);
    expect([ring.take(), ring.take(), ring.take()]).toEqual(['b', 'c', 'b']);
    now += 2_000;
    expect([ring.take(), ring.take(), ring.take()]).toEqual(['c', 'a', 'b']);
    // a wait of 10 minutes rests the key for the skip time only
    ring.rest(2, 600_000);
    now += KEY_REFUSED_SKIP_MS - 1;
    expect([ring.take(), ring.take()]).toEqual(['a', 'b']);
    now += 1;
    expect(ring.take()).toBe('c');
    // refused (60 s), then asked to wait 1 s: still out for the 60 s
    ring.refuse(0);
    ring.rest(0, 1_000);
    now += 1_000;
    expect([ring.take(), ring.take(), ring.take()]).toEqual(['b', 'c', 'b']);
    // every key skipped: the one back in service soonest (resting 2 s before refused 60 s)
    const both = new KeyRing(['x', 'y'], { now: () => now });
    both.refuse(0);
    both.rest(1, 2_000);
    expect([both.take(), both.take()]).toEqual(['y', 'y']);
    // a skipped key that serves is back in service at once
    both.serving(0);
    expect([both.take(), both.take()]).toEqual(['x', 'x']);
    // no wait, or a position not in the ring: nothing changes
    ring.rest(1, 0);
    ring.rest(5, 1_000);
    expect([ring.take(), ring.take()]).toEqual(['c', 'b']);
  });

  it('a refused key is skipped for KEY_REFUSED_SKIP_MS, then back in turn; every key skipped → all take turns', () => {
    let now = 1_000_000;
    const ring = new KeyRing(['a, b', 'c'], { now: () => now });
    expect([ring.take(), ring.take(), ring.take(), ring.take()]).toEqual(['a', 'b', 'c', 'a']);
    ring.refuse(1); // b
    expect([ring.take(), ring.take(), ring.take()]).toEqual(['c', 'a', 'c']);
    now += KEY_REFUSED_SKIP_MS - 1;
    expect([ring.take(), ring.take()]).toEqual(['a', 'c']);
    now += 1;
    expect([ring.take(), ring.take(), ring.take()]).toEqual(['a', 'b', 'c']);
    for (const p of [0, 1, 2]) ring.refuse(p);
    expect([ring.take(), ring.take(), ring.take()]).toEqual(['a', 'b', 'c']);
    // never a position to avoid (keys tried in a call); null once every one is
    expect(ring.pick(new Set([0, 1]))).toBe(2);
    expect(ring.pick(new Set([0, 1, 2]))).toBeNull();
  });
});
