/**
 * M2: a call refused only because of calls in flight waits for them, then gets a RETRYABLE 429
 * (its job keeps running); only a call that does not fit even with nothing in flight gets the
 * budget error and pauses its job. Real gateways over HTTP, real stores (SQLite; two gateways
 * over one PostgreSQL), real concurrent calls against an upstream that holds each call until
 * released.
 * Figures (µ$): budget 1,000,000; price 3 / 15 / 3.75 / 6 / 0.3 µ$ per token; a call's worst
 * case = ⌈body bytes / 3⌉ × 6 (dearest input-side rate) + max tokens × 15, worked out here from
 * the body; the upstream's usage (10 input, 100 output) costs 30 + 1,500 = 1,530.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { hashToken } from '../core/tokens.js';
import type { JobRow, NewModelCall, Store } from '../store/types.js';
import { abortJobCalls, liveCallCount } from './live-calls.js';
import { createGateway } from './gateway.js';
import type { PriceTable } from './prices.js';
import { onSqlite, onTwoPostgres } from './test-stores.js';
import { listen, type TestServer } from './test-server.js';

const PRICE = { input: 3, output: 15, cacheWrite5m: 3.75, cacheWrite1h: 6, cacheRead: 0.3 };
const PRICES: PriceTable = { version: 'test', models: { 'test-model': PRICE, 'gpt-test': PRICE }, default: PRICE };
const TOKEN = 'flj_in_flight_0123456789abcdefghij';
const messagesBody = (maxTokens: number) => JSON.stringify({ model: 'test-model', max_tokens: maxTokens, messages: [{ role: 'user', content: 'hello' }] });
const responsesBody = (maxTokens: number) => JSON.stringify({ model: 'gpt-test', input: 'hello', max_output_tokens: maxTokens });
const worstOf = (body: string, maxTokens: number) => Math.ceil(Buffer.byteLength(body) / 3) * 6 + maxTokens * 15;
const CALL = 3_900; // max tokens of an ordinary call: worst case ~59,000 µ$
const COST = 1_530;

/** A fake upstream (Anthropic Messages and OpenAI Responses) that holds each call until `release()`. */
async function heldUpstream() {
  let seen = 0;
  const waiting: Array<() => void> = [];
  const server: Server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      seen += 1;
      waiting.push(() => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(
          req.url?.endsWith('/responses')
            ? JSON.stringify({ id: 'r', object: 'response', model: 'test-model', status: 'completed', output: [], usage: { input_tokens: 10, output_tokens: 100 } })
            : JSON.stringify({ id: 'm', type: 'message', role: 'assistant', model: 'test-model', content: [{ type: 'text', text: 'ok' }], stop_reason: 'end_turn', usage: { input_tokens: 10, output_tokens: 100 } }),
        );
      });
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    seen: () => seen,
    /** Answers every call held so far. */
    release: () => waiting.splice(0).forEach((f) => f()),
    close: () => {
      (server as unknown as { closeAllConnections(): void }).closeAllConnections();
      return new Promise<void>((r) => server.close(() => r()));
    },
  };
}

/** A running root job (TOKEN) with 1,000,000 µ$ of budget, `spent` µ$ spent. */
async function runningJob(store: Store, spent: number): Promise<number> {
  const now = Date.now();
  const runner = await store.createRunner({ name: 'r', labels: {}, capacity: 1, credentialHash: 'c'.repeat(64), now });
  const job = await store.createJob({ parentId: null, agent: 'a', agentVersion: '1', input: {}, selector: {}, priority: 0, budgetMicros: 1_000_000, now });
  await store.claimJob({ id: runner.id, labels: {} }, hashToken(TOKEN), now);
  await store.transitionJob(job.id, 1, ['assigned'], 'running', now, { startedAt: now });
  const held = await store.reserveBudget(job.id, spent, now);
  if (!held?.ok) throw new Error('must fit');
  await store.settleBudget(job.id, held.reservationId, spent, now);
  return job.id;
}

/**
 * A gateway over `store` (Anthropic and OpenAI-compatible upstream `up`) waiting `waitMs` for
 * calls in flight; `exhausted` collects onBudgetExhausted, which pauses the job in `store` as
 * the control plane does (server/budget-pause.ts) when `pause` is set.
 */
async function gatewayOver(store: Store, upUrl: string, waitMs: number, pause = false) {
  const exhausted: JobRow[] = [];
  const app = createGateway({
    store,
    config: {
      provider: 'anthropic',
      anthropicApiKey: 'sk-up',
      anthropicBaseUrl: upUrl,
      openai: { provider: 'openai-compatible', baseUrl: upUrl + '/v1', apiKeys: [] },
      modelProviders: [
        { pattern: 'gpt-*', provider: 'openai-compatible' },
        { pattern: '*', provider: 'anthropic' },
      ],
      prices: PRICES,
      budgetWaitMs: waitMs,
    },
    scriptFor: async () => null,
    onBudgetExhausted: async (job, message, needMicros, needCall) => {
      exhausted.push(job);
      if (pause) await store.pauseJobForBudget(job.id, job.attempt, message, Date.now(), needMicros, needCall);
    },
  });
  const server: TestServer = await listen(app.fetch);
  const post = (path: string, body: string) =>
    fetch(server.url + path, { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': TOKEN, authorization: `Bearer ${TOKEN}` }, body }).then(async (r) => ({
      status: r.status,
      headers: r.headers,
      body: await r.text(),
      at: Date.now(),
    }));
  return { exhausted, post, url: server.url, close: () => server.close() };
}

/** Runs `fn` with a gateway over a fresh SQLite store, a job with `spent` µ$ spent, and a held upstream. */
function withSqlite(spent: number, waitMs: number, fn: (o: { store: Store; jobId: number; up: Awaited<ReturnType<typeof heldUpstream>>; gw: Awaited<ReturnType<typeof gatewayOver>> }) => Promise<void>, pause = false) {
  return onSqlite(async ([store]) => {
    const up = await heldUpstream();
    const gw = await gatewayOver(store!, up.url, waitMs, pause);
    try {
      await fn({ store: store!, jobId: await runningJob(store!, spent), up, gw });
    } finally {
      up.release();
      await gw.close();
      await up.close();
    }
  });
}

describe('a call kept out only by calls in flight (M2)', () => {
  const body = messagesBody(CALL);
  const worst = worstOf(body, CALL);

  it('waits for them, and is served once one settles (no refusal, no pause)', () =>
    withSqlite(900_000, 20_000, async ({ store, jobId, up, gw }) => {
      expect(900_000 + worst).toBeLessThanOrEqual(1_000_000); // one fits ...
      expect(900_000 + 2 * worst).toBeGreaterThan(1_000_000); // ... two do not
      const a = gw.post('/v1/messages', body);
      await expect.poll(() => up.seen(), { timeout: 10_000 }).toBe(1);
      const b = gw.post('/v1/messages', body);
      await new Promise((r) => setTimeout(r, 400));
      expect(up.seen()).toBe(1); // b waits: it has not reached the upstream
      const releasedAt = Date.now();
      up.release();
      expect((await a).status).toBe(200);
      await expect.poll(() => up.seen(), { timeout: 10_000 }).toBe(2);
      up.release();
      const second = await b;
      expect(second.status).toBe(200);
      expect(second.at - releasedAt).toBeLessThan(10_000); // woken by the settle, long before its wait ran out
      expect(gw.exhausted).toEqual([]);
      expect(await store.getJob(jobId)).toMatchObject({ status: 'running' });
      expect(await store.getTreeBudget(jobId, Date.now())).toMatchObject({ spentMicros: 900_000 + 2 * COST, reservedMicros: 0 });
      expect((await store.costRollup({ by: 'job', since: 0 }))[0]).toMatchObject({ calls: 2, refusedCalls: 0 });
    }));

  it('gets a retryable 429 when they are still in flight at the end of the wait (Anthropic and OpenAI shapes); the job keeps running and a retry after the settle is served', () =>
    withSqlite(900_000, 300, async ({ store, jobId, up, gw }) => {
      const a = gw.post('/v1/messages', body);
      await expect.poll(() => up.seen(), { timeout: 10_000 }).toBe(1);

      const t0 = Date.now();
      const b = await gw.post('/v1/messages', body);
      expect(b.at - t0).toBeGreaterThanOrEqual(290); // it waited
      expect(b.status).toBe(429);
      expect(b.headers.get('retry-after')).toBe('5');
      expect(b.headers.get('x-should-retry')).not.toBe('false');
      const err = (JSON.parse(b.body) as { type: string; error: { type: string; message: string } }).error;
      expect(err.type).toBe('rate_limit_error');
      expect(err.message).toContain(`job tree ${jobId}'s budget of $1.000000: $0.900000 spent, $${(worst / 1e6).toFixed(6)} held by calls in flight; this call may cost up to $${(worst / 1e6).toFixed(6)}: it fits in the $0.100000 not spent, but not beside what those calls hold, and may once they settle`);

      const rb = responsesBody(CALL);
      expect(900_000 + worst + worstOf(rb, CALL)).toBeGreaterThan(1_000_000);
      const c = await gw.post('/v1/responses', rb);
      expect(c.status).toBe(429);
      expect(c.headers.get('retry-after')).toBe('5');
      expect(c.headers.get('retry-after-ms')).toBe('5000');
      expect(c.headers.get('x-should-retry')).toBe('true');
      const oerr = (JSON.parse(c.body) as { error: { code: string; message: string } }).error;
      expect(oerr.code).toBe('rate_limit_exceeded');
      // the delay said once, in the words Codex reads
      expect(oerr.message).toMatch(new RegExp(`^budget busy: job tree ${jobId}'s budget .*Not out of budget \\(job ${jobId}\\)\\. Please try again in 5s\\.$`));

      expect(gw.exhausted).toEqual([]); // not paused
      expect(await store.getJob(jobId)).toMatchObject({ status: 'running' });
      expect(up.seen()).toBe(1);
      up.release();
      expect((await a).status).toBe(200);
      // the harness's retry: room now
      const retry = gw.post('/v1/messages', body);
      await expect.poll(() => up.seen(), { timeout: 10_000 }).toBe(2);
      up.release();
      expect((await retry).status).toBe(200);
      expect((await store.costRollup({ by: 'job', since: 0 }))[0]).toMatchObject({ calls: 4, refusedCalls: 2 });
      expect(await store.getTreeBudget(jobId, Date.now())).toMatchObject({ spentMicros: 900_000 + 2 * COST, reservedMicros: 0 });
    }));
});

describe('a call whose wait for calls in flight is cut short', () => {
  it('its client hangs up: recorded with no reply (status 0, refused client_gone), not as a 429 it never got; nothing goes upstream', () =>
    withSqlite(900_000, 20_000, async ({ store, jobId, up, gw }) => {
      const body = messagesBody(CALL);
      const a = gw.post('/v1/messages', body);
      await expect.poll(() => up.seen(), { timeout: 10_000 }).toBe(1);
      const recorded = ledgerSpy(store);
      const ac = new AbortController();
      const b = fetch(gw.url + '/v1/messages', { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': TOKEN }, body, signal: ac.signal });
      await new Promise((r) => setTimeout(r, 300));
      ac.abort();
      await expect(b).rejects.toThrow();
      await expect.poll(() => recorded.map((c) => [c.httpStatus, c.refused]), { timeout: 5_000 }).toEqual([[0, 'client_gone']]);
      expect(recorded[0]).toMatchObject({ jobId, costMicros: 0, api: 'anthropic-messages' });
      up.release();
      expect((await a).status).toBe(200);
      expect(up.seen()).toBe(1);
      expect(gw.exhausted).toEqual([]);
      expect(await store.getTreeBudget(jobId, Date.now())).toMatchObject({ spentMicros: 900_000 + COST, reservedMicros: 0 });
    }));

  it("its job's attempt ends: a 502 the harness does not retry (refused job_ended), not a 429 to try again in 5 s (Anthropic and OpenAI shapes)", () =>
    withSqlite(900_000, 20_000, async ({ store, jobId, up, gw }) => {
      const a = gw.post('/v1/messages', messagesBody(CALL));
      await expect.poll(() => up.seen(), { timeout: 10_000 }).toBe(1);
      const recorded = ledgerSpy(store);
      const b = gw.post('/v1/messages', messagesBody(CALL));
      const c = gw.post('/v1/responses', responsesBody(CALL));
      await expect.poll(() => liveCallCount(jobId), { timeout: 5_000 }).toBe(3); // the held call and the two waiting
      expect(abortJobCalls(store, jobId)).toBe(3);
      const [rb, rc] = await Promise.all([b, c]);
      expect(rb.status).toBe(502);
      expect(rb.headers.get('x-should-retry')).toBe('false');
      expect((JSON.parse(rb.body) as { error: { type: string; message: string } }).error).toEqual({ type: 'api_error', message: expect.stringMatching(/^this call was cut while it waited for budget room: its job's attempt ended/) });
      expect(rc.status).toBe(502);
      expect(rc.headers.get('x-should-retry')).toBe('false');
      expect((JSON.parse(rc.body) as { error: { message: string } }).error.message).toMatch(/^this call was cut while it waited for budget room/);
      expect(recorded.filter((x) => x.refused !== undefined).map((x) => [x.api, x.httpStatus, x.refused]).sort()).toEqual([
        ['anthropic-messages', 502, 'job_ended'],
        ['openai-responses', 502, 'job_ended'],
      ]);
      expect(up.seen()).toBe(1);
      await a; // the held call was cut too
    }));
});

/** The ledger rows `store` records as refusals (recordModelCall) from now on, in order. */
function ledgerSpy(store: Store): NewModelCall[] {
  const seen: NewModelCall[] = [];
  const record = store.recordModelCall.bind(store);
  store.recordModelCall = (call) => {
    seen.push(call);
    return record(call);
  };
  return seen;
}

describe('a call that does not fit even with nothing in flight', () => {
  it('gets the non-retryable budget error at once, and its job is paused (Anthropic 402, OpenAI 429 insufficient_quota), while another call is in flight', () =>
    withSqlite(930_000, 20_000, async ({ jobId, up, gw }) => {
      const small = messagesBody(CALL);
      expect(930_000 + worstOf(small, CALL)).toBeLessThanOrEqual(1_000_000);
      const a = gw.post('/v1/messages', small);
      await expect.poll(() => up.seen(), { timeout: 10_000 }).toBe(1);

      const big = messagesBody(5_000);
      expect(930_000 + worstOf(big, 5_000)).toBeGreaterThan(1_000_000); // out of money whatever settles
      const t0 = Date.now();
      const b = await gw.post('/v1/messages', big);
      expect(b.at - t0).toBeLessThan(5_000); // no wait
      expect(b.status).toBe(402);
      expect(b.headers.get('x-should-retry')).toBe('false');
      expect((JSON.parse(b.body) as { error: { type: string; message: string } }).error).toMatchObject({ type: 'billing_error', message: expect.stringMatching(/^budget exhausted/) });

      const c = await gw.post('/v1/responses', responsesBody(5_000));
      expect(c.status).toBe(429);
      expect(c.headers.get('x-should-retry')).toBe('false');
      expect((JSON.parse(c.body) as { error: { code: string } }).error.code).toBe('insufficient_quota');

      expect(gw.exhausted.map((j) => j.id)).toEqual([jobId, jobId]); // the control plane pauses it
      up.release();
      expect((await a).status).toBe(200);
    }));
});

describe('a call waiting for calls in flight when a sibling call pauses its job for budget', () => {
  // fresh-tester finding: two calls waiting when their job paused were served after the top-up
  // (the job still paused, its attempt being stopped), spending the room sized for the resumed attempt
  const small = messagesBody(CALL);
  const big = messagesBody(7_000);

  it('gets the budget error of a paused job (Anthropic 402, OpenAI 429 insufficient_quota) at once, never reserves, and a top-up does not let it through', () =>
    withSqlite(
      900_000,
      20_000,
      async ({ store, jobId, up, gw }) => {
        expect(900_000 + worstOf(small, CALL)).toBeLessThanOrEqual(1_000_000); // one fits ...
        expect(900_000 + 2 * worstOf(small, CALL)).toBeGreaterThan(1_000_000); // ... two do not: the second waits
        expect(900_000 + worstOf(big, 7_000)).toBeGreaterThan(1_000_000); // out of money whatever settles: it pauses the job
        const a = gw.post('/v1/messages', small);
        await expect.poll(() => up.seen(), { timeout: 10_000 }).toBe(1);
        const recorded = ledgerSpy(store);
        const b = gw.post('/v1/messages', small);
        const b2 = gw.post('/v1/responses', responsesBody(CALL));
        await expect.poll(() => liveCallCount(jobId), { timeout: 5_000 }).toBe(3); // the held call and the two waiting
        const t0 = Date.now();
        const c = await gw.post('/v1/messages', big);
        expect(c.status).toBe(402);
        expect((await store.getJob(jobId))?.status).toBe('paused');
        // the top-up comes at once (the tester's came 0.8 s after the pause)
        await store.topUpBudget(jobId, 500_000, Date.now());
        const [rb, rb2] = await Promise.all([b, b2]);
        expect(rb.at - t0).toBeLessThan(5_000); // not the 20 s wait
        expect(rb.status).toBe(402);
        expect(rb.headers.get('x-should-retry')).toBe('false');
        expect((JSON.parse(rb.body) as { error: { type: string; message: string } }).error).toEqual({ type: 'billing_error', message: expect.stringMatching(new RegExp(`^budget exhausted: job ${jobId} is paused for budget; `)) });
        expect(rb2.status).toBe(429);
        expect(rb2.headers.get('x-should-retry')).toBe('false');
        expect((JSON.parse(rb2.body) as { error: { code: string; message: string } }).error).toMatchObject({ code: 'insufficient_quota', message: expect.stringMatching(new RegExp(`^budget exhausted: job ${jobId} is paused for budget; `)) });
        expect(recorded.filter((x) => x.refused !== undefined).map((x) => [x.api, x.httpStatus, x.refused]).sort()).toEqual([
          ['anthropic-messages', 402, 'budget'],
          ['anthropic-messages', 402, 'budget'],
          ['openai-responses', 429, 'budget'],
        ]);
        up.release();
        expect((await a).status).toBe(200);
        expect(up.seen()).toBe(1); // only the call admitted before the pause reached the upstream
        // all the tree spent: what it had, and the one call served (1,530 µ$); nothing reserved
        expect(await store.getTreeBudget(jobId, Date.now())).toMatchObject({ limitMicros: 1_500_000, spentMicros: 900_000 + COST, reservedMicros: 0 });
      },
      true,
    ));
});

/** Runs `fn` with two gateways (each over its own store of one PostgreSQL database) and a held upstream; skipped without PostgreSQL. */
function withTwoGateways(
  skip: () => void,
  pause: boolean,
  fn: (o: { s1: Store; s2: Store; up: Awaited<ReturnType<typeof heldUpstream>>; g1: Awaited<ReturnType<typeof gatewayOver>>; g2: Awaited<ReturnType<typeof gatewayOver>> }) => Promise<void>,
) {
  return onTwoPostgres(async ([s1, s2]) => {
    const up = await heldUpstream();
    const g1 = await gatewayOver(s1!, up.url, 20_000, pause);
    const g2 = await gatewayOver(s2!, up.url, 20_000, pause);
    try {
      await fn({ s1: s1!, s2: s2!, up, g1, g2 });
    } finally {
      up.release();
      await g1.close();
      await g2.close();
      await up.close();
    }
  }, skip);
}

describe('waiting across gateways', () => {
  it('two gateways over one PostgreSQL: a call waiting on one is served once the call in flight on the other settles', (ctx) =>
    withTwoGateways(() => ctx.skip(), false, async ({ s1, s2, up, g1, g2 }) => {
      const jobId = await runningJob(s1, 900_000);
      const body = messagesBody(CALL);
      const a = g1.post('/v1/messages', body);
      await expect.poll(() => up.seen(), { timeout: 10_000 }).toBe(1);
      const b = g2.post('/v1/messages', body);
      await new Promise((r) => setTimeout(r, 400));
      expect(up.seen()).toBe(1);
      up.release();
      expect((await a).status).toBe(200);
      await expect.poll(() => up.seen(), { timeout: 10_000 }).toBe(2); // seen by polling: no settle in g2's process
      up.release();
      expect((await b).status).toBe(200);
      expect([...g1.exhausted, ...g2.exhausted]).toEqual([]);
      expect(await s2.getTreeBudget(jobId, Date.now())).toMatchObject({ spentMicros: 900_000 + 2 * COST, reservedMicros: 0 });
    }));

  it("two gateways over one PostgreSQL: a call waiting on one is refused as a paused job's once a call on the other pauses the job, and a top-up does not let it through", (ctx) =>
    withTwoGateways(() => ctx.skip(), true, async ({ s1, s2, up, g1, g2 }) => {
      const jobId = await runningJob(s1, 900_000);
      const a = g1.post('/v1/messages', messagesBody(CALL));
      await expect.poll(() => up.seen(), { timeout: 10_000 }).toBe(1);
      const b = g2.post('/v1/messages', messagesBody(CALL)); // waits: no settle in g2's process wakes it, its poll does
      await new Promise((r) => setTimeout(r, 300));
      expect((await g1.post('/v1/messages', messagesBody(7_000))).status).toBe(402); // pauses the job
      await s1.topUpBudget(jobId, 500_000, Date.now());
      const rb = await b;
      expect(rb.status).toBe(402);
      expect((JSON.parse(rb.body) as { error: { message: string } }).error.message).toMatch(new RegExp(`^budget exhausted: job ${jobId} is paused for budget; `));
      up.release();
      expect((await a).status).toBe(200);
      expect(up.seen()).toBe(1);
      expect(await s2.getTreeBudget(jobId, Date.now())).toMatchObject({ limitMicros: 1_500_000, spentMicros: 900_000 + COST, reservedMicros: 0 });
    }));
});
