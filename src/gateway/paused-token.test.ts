/**
 * Issue 3: once a tree is spent, every route and credential form gets the budget refusal —
 * also AFTER the first refusal has paused the job (reason budget), when its token no longer
 * authenticates a live job. The harness must keep seeing the non-retryable budget error in its
 * wire format's shape (Anthropic 402 billing_error, OpenAI 429 insufficient_quota, both with
 * `x-should-retry: false`), naming the budget and what is left, not a 401 (which reads as a bad
 * key), and the upstream sees no call. A job that ended for another reason keeps the 401.
 * Real stores (SQLite; PostgreSQL with a second gateway "process"), real HTTP, a fake upstream.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { hashToken } from '../core/tokens.js';
import type { Store } from '../store/types.js';
import { createGateway } from './gateway.js';
import type { PriceTable } from './prices.js';
import { onSqlite, onTwoPostgres } from './test-stores.js';
import { listen, type TestServer } from './test-server.js';

const PRICE = { input: 3, output: 15, cacheWrite5m: 3.75, cacheWrite1h: 6, cacheRead: 0.3 };
const PRICES: PriceTable = { version: 'test', models: {}, default: PRICE };
const TOKEN = 'flj_pausedtoken_0123456789abcdef';
const OTHER = 'flj_pausedother_0123456789abcdef';

const msg = (stream: boolean) => JSON.stringify({ model: 'claude-haiku-4-5', max_tokens: 10, stream, messages: [{ role: 'user', content: 'hi' }] });
const chat = (stream: boolean) => JSON.stringify({ model: 'gpt-5', max_tokens: 10, stream, messages: [{ role: 'user', content: 'hi' }] });
const resp = (stream: boolean) => JSON.stringify({ model: 'gpt-5', max_output_tokens: 10, stream, input: 'hi' });
const X = (t: string) => ({ 'x-api-key': t });
const B = (t: string) => ({ authorization: `Bearer ${t}` });

/** Every route × credential form × streamed or not. */
const FORMS: Array<[name: string, path: string, body: string, auth: (t: string) => Record<string, string>, format: 'anthropic' | 'openai']> = [
  ['messages, x-api-key', '/v1/messages', msg(false), X, 'anthropic'],
  ['messages, x-api-key, streamed', '/v1/messages?beta=true', msg(true), X, 'anthropic'],
  ['messages, Bearer', '/v1/messages', msg(false), B, 'anthropic'],
  ['messages, Bearer, streamed', '/v1/messages', msg(true), B, 'anthropic'],
  ['count_tokens, x-api-key', '/v1/messages/count_tokens', msg(false), X, 'anthropic'],
  ['count_tokens, Bearer', '/v1/messages/count_tokens?beta=true', msg(false), B, 'anthropic'],
  ['chat completions, Bearer', '/v1/chat/completions', chat(false), B, 'openai'],
  ['chat completions, Bearer, streamed', '/v1/chat/completions', chat(true), B, 'openai'],
  ['chat completions, x-api-key', '/v1/chat/completions', chat(false), X, 'openai'],
  ['responses, Bearer', '/v1/responses', resp(false), B, 'openai'],
  ['responses, Bearer, streamed', '/v1/responses', resp(true), B, 'openai'],
];

async function upstreamServer() {
  let calls = 0;
  const server: Server = createServer((req, res) => {
    calls += 1;
    req.resume();
    res.writeHead(500, { 'content-type': 'application/json' }).end('{}');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, calls: () => calls, close: () => new Promise<void>((r) => server.close(() => r())) };
}

/** A root job with a $1.00 budget, all spent, running with `token`; returns its id. */
async function spentJob(store: Store, token: string, name: string): Promise<number> {
  const now = Date.now();
  const runner = await store.createRunner({ name, labels: {}, capacity: 1, credentialHash: name.padEnd(64, 'c'), now });
  const job = await store.createJob({ parentId: null, agent: 'a', agentVersion: '1', input: {}, selector: {}, priority: 0, budgetMicros: 1_000_000, now });
  const claimed = await store.claimJob({ id: runner.id, labels: {} }, hashToken(token), now);
  expect(claimed?.id).toBe(job.id);
  await store.transitionJob(job.id, 1, ['assigned'], 'running', now, { startedAt: now });
  const held = await store.reserveBudget(job.id, 1_000_000, now);
  if (!held?.ok) throw new Error('the reservation must fit');
  await store.settleBudget(job.id, held.reservationId, 1_000_000, now);
  return job.id;
}

describe('a job paused for budget', () => {

  /** `stores[0]` serves the first (pausing) call; every later call goes to the last store's gateway. */
  async function run(stores: Store[]) {
    const up = await upstreamServer();
    const gws: TestServer[] = [];
    try {
      for (const store of stores) {
        const app = createGateway({
          store,
          config: { provider: 'anthropic', anthropicApiKey: 'sk-ant-upstream-key-0001', anthropicBaseUrl: up.url, prices: PRICES, openai: { provider: 'openai', baseUrl: `${up.url}/v1`, apiKeys: ['sk-proj-upstream-key-0002'] }, modelProviders: [{ pattern: 'claude-*', provider: 'anthropic' }, { pattern: 'gpt-*', provider: 'openai' }] },
          scriptFor: async () => null,
          // What the control plane does (server.ts): pause the job for budget.
          onBudgetExhausted: async (job, message) => void (await store.pauseJobForBudget(job.id, job.attempt, message, Date.now())),
        });
        gws.push(await listen(app.fetch));
      }
      const id = await spentJob(stores[0]!, TOKEN, 'r1');
      const post = (gw: TestServer, path: string, body: string, headers: Record<string, string>) => fetch(gw.url + path, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });

      const first = await post(gws[0]!, '/v1/messages', msg(false), X(TOKEN));
      expect(first.status).toBe(402);
      await first.arrayBuffer();
      expect((await stores[0]!.getJob(id))).toMatchObject({ status: 'paused', endReason: 'budget' });

      const gw = gws.at(-1)!;
      for (const [name, path, body, auth, format] of FORMS) {
        const res = await post(gw, path, body, auth(TOKEN));
        const text = await res.text();
        expect(res.headers.get('x-should-retry'), name).toBe('false');
        if (format === 'anthropic') {
          expect([name, res.status]).toEqual([name, 402]);
          expect(JSON.parse(text), name).toMatchObject({ type: 'error', error: { type: 'billing_error' } });
        } else {
          expect([name, res.status]).toEqual([name, 429]);
          expect(JSON.parse(text), name).toMatchObject({ error: { type: 'insufficient_quota', code: 'insufficient_quota' } });
        }
        const message = (JSON.parse(text) as { error: { message: string } }).error.message;
        expect(message, name).toMatch(new RegExp(`^budget exhausted: job ${id} is paused for budget; the call that paused it, sent again on resuming \\(with room for the larger request a resumed harness sends\\), may cost up to \\$[\\d.]+ and job tree ${id}'s budget has \\$0\\.000000 left now`));
      }
      expect(up.calls()).toBe(0);
      // each refusal is in the ledger as refused for budget, unbilled; the tree is untouched
      const usage = await stores[0]!.jobUsage(id);
      expect(usage).toMatchObject({ modelCalls: 0, costMicros: 0 }); // none reached a provider
      expect((await stores[0]!.costRollup({ by: 'job', since: 0 })).find((r) => r.key === String(id))).toMatchObject({ calls: 1 + FORMS.length, refusedCalls: 1 + FORMS.length, costMicros: 0 });
      expect(await stores[0]!.getTreeBudget(id, Date.now())).toMatchObject({ spentMicros: 1_000_000, reservedMicros: 0 });
      expect((await stores[0]!.getJob(id))?.status).toBe('paused');

      // a job that ended for another reason (cancelled) still gets the 401
      const other = await spentJob(stores[0]!, OTHER, 'r2');
      await stores[0]!.transitionJob(other, 1, ['running'], 'cancelled', Date.now());
      const a = await post(gw, '/v1/messages', msg(false), X(OTHER));
      expect(a.status).toBe(401);
      expect(((await a.json()) as { error: { type: string } }).error.type).toBe('authentication_error');
      const o = await post(gw, '/v1/chat/completions', chat(false), B(OTHER));
      expect(o.status).toBe(401);
      expect(((await o.json()) as { error: { code: string } }).error.code).toBe('invalid_api_key');

      // a top-up resumes the job as a new attempt: the old token is then dead for good (401)
      await stores[0]!.resumeBudgetPausedJobs(id, Date.now());
      const dead = await post(gw, '/v1/messages', msg(false), X(TOKEN));
      expect(dead.status).toBe(401);
      expect(up.calls()).toBe(0);
    } finally {
      await Promise.all(gws.map((g) => g.close()));
      await up.close();
    }
  }

  it('SQLite: every route and credential form gets the budget refusal in its format, not 401; the upstream sees nothing', () => onSqlite(run));

  it('PostgreSQL, paused through one gateway, refused by another (two store instances)', (ctx) => onTwoPostgres(run, () => ctx.skip()));
});
