/**
 * A 2xx upstream reply with no body — 204 No Content (no body at all, upstream-http.ts gives
 * `body: null`), or a 200 whose body is empty — on /v1/messages, /v1/chat/completions and
 * /v1/responses, streamed or not: the provider answered the call "served", so it may bill it,
 * yet nothing says what it used. DESIGN: unknown usage is never recorded as $0: the call is
 * recorded with usage unknown and charged the estimate (usage.ts estimateUsage: input
 * ⌈request bytes / 4⌉, output ⌈0 reply bytes / 4⌉ but at least 1 token), the tree is charged
 * that, the upstream is called once (not retried), and the client gets the upstream's status
 * with no body (none is invented). An empty body that names a content-encoding is empty too
 * (not a body that does not decode: no 502). /v1/messages/count_tokens is not billed: a 204
 * there adds a $0 ledger row (no tokens, usage known) and charges nothing.
 * Real HTTP: a raw node upstream, the gateway's node:http path, a real SQLite store.
 * Prices (USD per million tokens = µ$ per token): claude-x 3 input / 15 output; gpt-x 2 / 10.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashToken } from '../core/tokens.js';
import { openSqliteStore } from '../store/open.js';
import type { JobRow, Store } from '../store/types.js';
import { createGateway } from './gateway.js';
import type { PriceTable } from './prices.js';
import { price } from './test-metering.js';
import { listenNode, type TestServer } from './test-server.js';

const TOKEN = 'flj_empty_reply_0123456789abcdefghij';
const PRICES: PriceTable = { version: 't', models: { 'claude-x': price(3, 15, 3.75, 6, 0.3), 'gpt-x': price(2, 10, 2, 2, 1) }, default: price(1000, 1000, 1000, 1000, 1000) };
const BUDGET = 10_000_000;

let dir: string;
let store: Store;
let job: JobRow;
let up: Server;
let gw: TestServer;
/** Upstream calls by what the request's first message (or `input`) says. */
const seen = new Map<string, number>();

/** What the fake upstream answers, by the request's first message / input. */
const REPLIES: Record<string, (res: ServerResponse) => void> = {
  '204': (res) => void res.writeHead(204).end(),
  '204-sse': (res) => void res.writeHead(204, { 'content-type': 'text/event-stream' }).end(),
  '204-json': (res) => void res.writeHead(204, { 'content-type': 'application/json' }).end(),
  '200-empty': (res) => void res.writeHead(200, { 'content-type': 'application/json', 'content-length': '0' }).end(),
  '200-empty-sse': (res) => void res.writeHead(200, { 'content-type': 'text/event-stream' }).end(),
  // no bytes at all, though it names an encoding (zlib takes 0 bytes for a cut stream)
  '200-empty-gzip': (res) => void res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip', 'content-length': '0' }).end(),
};

beforeAll(async () => {
  up = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      if (req.url?.startsWith('/v1/messages/count_tokens')) return void res.writeHead(204).end();
      const parsed = JSON.parse(body) as { messages?: Array<{ content: string }>; input?: string };
      const what = String(parsed.messages?.[0]?.content ?? parsed.input);
      seen.set(what, (seen.get(what) ?? 0) + 1);
      const reply = REPLIES[what];
      if (!reply) return void res.writeHead(500, { 'content-type': 'application/json' }).end('{"error":"unexpected"}');
      reply(res);
    });
  });
  await new Promise<void>((r) => up.listen(0, '127.0.0.1', r));
  const base = `http://127.0.0.1:${(up.address() as AddressInfo).port}`;
  dir = mkdtempSync(join(tmpdir(), 'flotilla-empty-reply-'));
  store = await openSqliteStore(join(dir, 'flotilla.db'));
  const now = Date.now();
  const runner = await store.createRunner({ name: 'r', labels: {}, capacity: 1, credentialHash: 'c'.repeat(64), now });
  job = await store.createJob({ parentId: null, agent: 'a', agentVersion: '1', input: {}, selector: {}, priority: 0, budgetMicros: BUDGET, now });
  expect((await store.claimJob({ id: runner.id, labels: {} }, hashToken(TOKEN), now))?.id).toBe(job.id);
  await store.transitionJob(job.id, 1, ['assigned'], 'running', now, { startedAt: now });
  const gateway = createGateway({
    store,
    config: {
      provider: 'anthropic',
      anthropicApiKey: 'sk-ant-empty-reply',
      anthropicBaseUrl: base,
      openai: { provider: 'openai', baseUrl: base + '/v1', apiKeys: ['sk-oai-empty-reply'] },
      modelProviders: [
        { pattern: 'claude-*', provider: 'anthropic' },
        { pattern: 'gpt-*', provider: 'openai' },
      ],
      prices: PRICES,
      retry: { retries: 2, baseMs: 1 },
    },
    scriptFor: async () => null,
  });
  gw = await listenNode((req, res) => gateway.node(req, res));
});

afterAll(async () => {
  await gw?.close();
  up?.closeAllConnections();
  await new Promise<void>((r) => (up ? up.close(() => r()) : r()));
  await store?.close();
  rmSync(dir, { recursive: true, force: true });
});

type Api = 'messages' | 'chat' | 'responses';
const PATHS: Record<Api, string> = { messages: '/v1/messages', chat: '/v1/chat/completions', responses: '/v1/responses' };

/** The request body of a call of `api` whose first message (or input) is `what`, output limit 100. */
function bodyOf(api: Api, what: string, stream: boolean): string {
  if (api === 'messages') return JSON.stringify({ model: 'claude-x', max_tokens: 100, stream, messages: [{ role: 'user', content: what }] });
  if (api === 'chat') return JSON.stringify({ model: 'gpt-x', max_completion_tokens: 100, stream, messages: [{ role: 'user', content: what }] });
  return JSON.stringify({ model: 'gpt-x', max_output_tokens: 100, stream, input: what });
}

/** Posts one call; returns the client's status, body text and the request's byte count. */
async function call(api: Api, what: string, stream: boolean): Promise<{ status: number; text: string; bytes: number }> {
  const body = bodyOf(api, what, stream);
  const res = await fetch(gw.url + PATHS[api], { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': TOKEN, authorization: `Bearer ${TOKEN}` }, body });
  return { status: res.status, text: await res.text(), bytes: Buffer.byteLength(body) };
}

interface LedgerRow {
  http_status: number;
  api: string;
  streamed: number;
  usage_known: number;
  input_tokens: number;
  output_tokens: number;
  cost_micros: number;
  refused: string | null;
}

/** The ledger rows written so far, oldest first (read from the SQLite file). */
function ledger(): LedgerRow[] {
  const db = new BetterSqlite3(join(dir, 'flotilla.db'), { readonly: true });
  try {
    return db.prepare('select http_status, api, streamed, usage_known, input_tokens, output_tokens, cost_micros, refused from model_calls order by id').all() as LedgerRow[];
  } finally {
    db.close();
  }
}

/** What the tree has been charged and still holds, µ$. */
async function tree(): Promise<{ spent: number; reserved: number }> {
  const b = (await store.getTreeBudget(job.id, Date.now()))!;
  return { spent: b.spentMicros, reserved: b.reservedMicros };
}

/**
 * Sends one call answered `what` and checks it end to end: the client gets `status` and an
 * empty body, the upstream was called once, one ledger row (status `status`, usage unknown,
 * input ⌈bytes/4⌉, output 1, cost `cost(input)` µ$) and the tree charged exactly that.
 */
async function expectEstimated(api: Api, what: string, stream: boolean, status: number, cost: (input: number) => number): Promise<void> {
  const before = { rows: ledger().length, ...(await tree()) };
  seen.delete(what);
  const r = await call(api, what, stream);
  expect([r.status, r.text]).toEqual([status, '']);
  expect(seen.get(what)).toBe(1);
  const input = Math.ceil(r.bytes / 4);
  const apiName = api === 'messages' ? 'anthropic-messages' : api === 'chat' ? 'openai-chat' : 'openai-responses';
  await expect.poll(() => ledger().length, { timeout: 2000, interval: 10 }).toBe(before.rows + 1);
  expect(ledger()[before.rows]).toEqual({ http_status: status, api: apiName, streamed: stream ? 1 : 0, usage_known: 0, input_tokens: input, output_tokens: 1, cost_micros: cost(input), refused: null });
  expect(cost(input)).toBeGreaterThan(0);
  expect(await tree()).toEqual({ spent: before.spent + cost(input), reserved: 0 });
}

// claude-x: input × 3 µ$ + 1 output token × 15 µ$; gpt-x: input × 2 µ$ + 1 × 10 µ$
const claude = (input: number) => input * 3 + 15;
const gpt = (input: number) => input * 2 + 10;

describe('a 2xx reply with no body is charged the estimate, never $0', () => {
  it('an empty 200 that names a content-encoding is an empty 200, not a broken body: the client gets the 200, the call the estimate', async () => {
    await expectEstimated('messages', '200-empty-gzip', false, 200, claude);
    await expectEstimated('chat', '200-empty-gzip', false, 200, gpt);
  });

  it('/v1/messages, not streamed: a 204 and a 200 with an empty body; count_tokens answered 204 is recorded at $0, not billed', async () => {
    await expectEstimated('messages', '204', false, 204, claude);
    await expectEstimated('messages', '204-json', false, 204, claude);
    await expectEstimated('messages', '200-empty', false, 200, claude);
    const before = { rows: ledger().length, ...(await tree()) };
    const count = await fetch(gw.url + '/v1/messages/count_tokens', { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': TOKEN }, body: bodyOf('messages', 'count', false) });
    expect([count.status, await count.text()]).toEqual([204, '']);
    // RFC 9110 §8.6: a 204 carries no Content-Length (the gateway added "content-length: 0": tester finding)
    expect(count.headers.get('content-length')).toBeNull();
    expect(ledger().slice(before.rows)).toEqual([{ http_status: 204, api: 'anthropic-count-tokens', streamed: 0, usage_known: 1, input_tokens: 0, output_tokens: 0, cost_micros: 0, refused: null }]);
    expect(await tree()).toEqual({ spent: before.spent, reserved: 0 });
  });

  it('/v1/messages, streamed: a 204 (with and without an event-stream type) and an empty 200 event stream', async () => {
    await expectEstimated('messages', '204', true, 204, claude);
    await expectEstimated('messages', '204-sse', true, 204, claude);
    await expectEstimated('messages', '200-empty-sse', true, 200, claude);
  });

  it('/v1/chat/completions, not streamed and streamed', async () => {
    await expectEstimated('chat', '204', false, 204, gpt);
    await expectEstimated('chat', '200-empty', false, 200, gpt);
    await expectEstimated('chat', '204', true, 204, gpt);
    await expectEstimated('chat', '204-sse', true, 204, gpt);
    await expectEstimated('chat', '200-empty-sse', true, 200, gpt);
  });

  it('/v1/responses, not streamed and streamed', async () => {
    await expectEstimated('responses', '204', false, 204, gpt);
    await expectEstimated('responses', '200-empty', false, 200, gpt);
    await expectEstimated('responses', '204', true, 204, gpt);
    await expectEstimated('responses', '204-sse', true, 204, gpt);
    await expectEstimated('responses', '200-empty-sse', true, 200, gpt);
  });
});
