/**
 * Every call the gateway refuses is in the ledger with the right fields (issue 3, "bad input":
 * "the call is recorded as refused"), as a fresh user checks it:
 * `select api, http_status, refused, model, provider from model_calls` on the SQLite file.
 * - a body the gateway cannot decode (a bad gzip body 400, `content-encoding: zstd` 415, a gzip
 *   bomb 413) — once the job token is known; without a valid token: 401, no row;
 * - the scripted model without a script for the agent (400 `no_script`), or whose script fails
 *   to load (500 `script_error`), reservation at $0;
 * - a refused body that names a valid model: the row names it (else `unknown`);
 * - `provider_not_configured` for a model routed to openai / openai-compatible: that provider.
 * Real HTTP (the node adapter the control plane serves, and the web adapter), a fake upstream,
 * a real SQLite store read through its file.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import BetterSqlite3 from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openSqliteStore } from '../store/open.js';
import type { JobRow, Store } from '../store/types.js';
import { createGateway } from './gateway.js';
import { loadPriceTable } from './prices.js';
import { listenNode, startGateway, type GatewayStart, type TestGateway } from './test-server.js';
import { runningJob } from './test-stores.js';

const TOKEN = 'flj_refusedrows_0123456789abcdefghij';
const LIMIT = 64 * 1024;
const MESSAGE = { id: 'msg_1', type: 'message', role: 'assistant', model: 'claude-sonnet-4-5', content: [{ type: 'text', text: 'hi' }], stop_reason: 'end_turn', usage: { input_tokens: 100, output_tokens: 20 } };
const CHAT = { id: 'c', object: 'chat.completion', model: 'gpt-4o', choices: [], usage: { prompt_tokens: 10, completion_tokens: 2 } };

let dir: string;
let store: Store;
let job: JobRow;
const started: Array<TestGateway<Store>> = [];

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'flotilla-refused-rows-'));
  store = await openSqliteStore(join(dir, 'flotilla.db'));
  job = await runningJob(store, TOKEN, { budgetMicros: 5_000_000 });
});
afterAll(async () => {
  for (const g of started) await g.close();
  await store?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** A gateway over the file's SQLite store, posting as the file's job (closed after the file). */
async function gateway(o: Omit<GatewayStart<Store>, 'store' | 'job'> = {}): Promise<TestGateway<Store>> {
  const g = await startGateway<Store>({ upstream: (r) => ({ body: JSON.stringify(r.url.startsWith('/v1/messages') ? MESSAGE : CHAT) }), ...o, store, job: { token: TOKEN } });
  started.push(g);
  return g;
}

interface Row {
  api: string;
  http_status: number;
  refused: string | null;
  model: string;
  provider: string;
  input_tokens: number;
  cost_micros: number;
}

/** The ledger rows after id `after`, oldest first, read from the SQLite file as the tester did. */
function rows(after = 0): Row[] {
  const db = new BetterSqlite3(join(dir, 'flotilla.db'), { readonly: true });
  try {
    return db.prepare('select id, api, http_status, refused, model, provider, input_tokens, cost_micros from model_calls where id > ? order by id').all(after) as Row[];
  } finally {
    db.close();
  }
}

/** The id of the last ledger row (0 when none): what a test's own rows come after. */
function mark(): number {
  const db = new BetterSqlite3(join(dir, 'flotilla.db'), { readonly: true });
  try {
    return (db.prepare('select coalesce(max(id), 0) as id from model_calls').get() as { id: number }).id;
  } finally {
    db.close();
  }
}

/** api, status, refused, model, provider of each row (tokens and cost checked to be 0). */
const fields = (rs: Row[]) => {
  for (const r of rs) expect([r.input_tokens, r.cost_micros]).toEqual([0, 0]);
  return rs.map((r) => [r.api, r.http_status, r.refused, r.model, r.provider]);
};

const messages = { model: 'claude-sonnet-4-5', max_tokens: 100, messages: [{ role: 'user', content: 'fix the failing test, please' }] };
const chat = { model: 'gpt-4o', max_tokens: 50, messages: [{ role: 'user', content: 'hello' }] };
const bomb = gzipSync(JSON.stringify({ ...messages, messages: [{ role: 'user', content: ' '.repeat(10 * 1024 * 1024) }] }));
const errorOf = async (res: Response) => ((await res.json()) as { error: { type: string; message: string; code?: string } }).error;

describe.each(['node', 'fetch'] as const)('a body that cannot be decoded (the %s adapter): refused in the wire format AND recorded', (via) => {
  let gw: TestGateway<Store>;
  beforeAll(async () => {
    gw = await gateway({ openai: 'openai-compatible', config: { maxRequestBytes: LIMIT }, via });
  });
  const post = (path: string, body: Buffer, encoding: string, token?: string) => gw.post(path, body, { headers: { 'content-encoding': encoding }, ...(token ? { token } : {}) });

  it('bad gzip (400), zstd (415), a gzip bomb (413): each recorded as refused, api by path, model unknown; the upstream sees nothing', async () => {
    const from = mark();
    const seen = gw.up.seen.length;
    const a = await post('/v1/messages', Buffer.from(JSON.stringify(messages)), 'gzip');
    expect([a.status, a.headers.get('x-should-retry'), await errorOf(a)]).toEqual([400, 'false', { type: 'invalid_request_error', message: 'request body is not valid "gzip" data (content-encoding "gzip")' }]);
    const b = await post('/v1/chat/completions', Buffer.from(JSON.stringify(chat)), 'gzip');
    expect([b.status, (await errorOf(b)).code]).toEqual([400, 'invalid_content_encoding']);
    const c = await post('/v1/messages/count_tokens', Buffer.from(JSON.stringify(messages)), 'zstd');
    expect([c.status, await errorOf(c)]).toEqual([415, { type: 'invalid_request_error', message: 'content-encoding "zstd" is not supported: send the body uncompressed, or encoded as gzip, deflate or br' }]);
    const d = await post('/v1/responses', Buffer.from(JSON.stringify({ model: 'gpt-4o', input: 'x' })), 'zstd');
    expect([d.status, (await errorOf(d)).code]).toEqual([415, 'unsupported_content_encoding']);
    const e = await post('/v1/messages', bomb, 'gzip');
    expect([e.status, await errorOf(e)]).toEqual([413, { type: 'request_too_large', message: `request body (content-encoding "gzip") decodes to more than ${LIMIT} bytes; the limit is ${LIMIT}` }]);
    const f = await post('/v1/responses', bomb, 'gzip');
    expect([f.status, (await errorOf(f)).code]).toEqual([413, 'request_too_large']);
    expect(gw.up.seen.length).toBe(seen);
    expect(fields(rows(from))).toEqual([
      ['anthropic-messages', 400, 'bad_encoding', 'unknown', 'anthropic'],
      ['openai-chat', 400, 'bad_encoding', 'unknown', 'openai-compatible'],
      ['anthropic-count-tokens', 415, 'unsupported_encoding', 'unknown', 'anthropic'],
      ['openai-responses', 415, 'unsupported_encoding', 'unknown', 'openai-compatible'],
      ['anthropic-messages', 413, 'too_large', 'unknown', 'anthropic'],
      ['openai-responses', 413, 'too_large', 'unknown', 'openai-compatible'],
    ]);
    const tree = (await store.getTreeBudget(job.id, Date.now()))!;
    expect(tree.reservedMicros).toBe(0);
  });

  it('without a valid token: 401, not recorded (no job\'s call)', async () => {
    const from = mark();
    const res = await post('/v1/messages', Buffer.from('not gzip'), 'gzip', 'flj_refusedrows_not_a_live_token_x');
    expect(res.status).toBe(401);
    expect(rows(from)).toEqual([]);
  });

  it('a gzip body that decodes is still served (the decoded JSON upstream, without content-encoding)', async () => {
    const seen = gw.up.seen.length;
    const res = await post('/v1/messages', gzipSync(JSON.stringify(messages)), 'gzip');
    expect(res.status).toBe(200);
    expect(JSON.parse(gw.up.seen[seen]!.body)).toEqual(messages);
    expect(gw.up.seen[seen]!.headers['content-encoding']).toBeUndefined();
  });
});

describe('the model and provider of a refused call', () => {
  it('a body refused for another field names the model it gave; a body without a usable model: unknown', async () => {
    const gw = await gateway({ openai: 'openai-compatible' });
    const from = mark();
    const bad: Array<[string, object | string]> = [
      ['/v1/messages', { ...messages, max_tokens: '10' }],
      ['/v1/messages/count_tokens', { model: 'claude-haiku-4-5', messages: 'x' }],
      ['/v1/chat/completions', { ...chat, max_tokens: '10' }],
      ['/v1/responses', { model: 'gpt-4o', input: 'x', max_output_tokens: -1 }],
      ['/v1/messages', { ...messages, model: 42 }],
      ['/v1/chat/completions', { ...chat, model: 'm'.repeat(300) }],
      ['/v1/messages', 'not json'],
    ];
    for (const [path, body] of bad) expect((await gw.post(path, body)).status, `${path} ${JSON.stringify(body).slice(0, 60)}`).toBe(400);
    expect(fields(rows(from))).toEqual([
      ['anthropic-messages', 400, 'invalid_request', 'claude-sonnet-4-5', 'anthropic'],
      ['anthropic-count-tokens', 400, 'invalid_request', 'claude-haiku-4-5', 'anthropic'],
      ['openai-chat', 400, 'invalid_request', 'gpt-4o', 'openai-compatible'],
      ['openai-responses', 400, 'invalid_request', 'gpt-4o', 'openai-compatible'],
      ['anthropic-messages', 400, 'invalid_request', 'unknown', 'anthropic'],
      ['openai-chat', 400, 'invalid_request', 'unknown', 'openai-compatible'],
      ['anthropic-messages', 400, 'invalid_request', 'unknown', 'anthropic'],
    ]);
    expect(gw.up.seen).toHaveLength(0);
  });

  it('bytes that are not UTF-8 (every route) and /v1/messages with no message: 400 in the wire format, recorded, nothing upstream (fresh tester: both were forwarded and charged)', async () => {
    const gw = await gateway({ openai: 'openai-compatible' });
    const from = mark();
    // the bytes 0xff 0xfe where `o` has the text XX: JSON.parse of the decoded text would read U+FFFD, the upstream the raw bytes
    const latin = (o: object) => {
      const [head, tail] = JSON.stringify(o).split('XX');
      return Buffer.concat([Buffer.from(head!), Buffer.from([0xff, 0xfe]), Buffer.from(tail!)]);
    };
    const a = await gw.post('/v1/messages', latin({ ...messages, messages: [{ role: 'user', content: 'XX' }] }));
    expect([a.status, await errorOf(a)]).toEqual([400, { type: 'invalid_request_error', message: 'request body is not valid UTF-8 (RFC 8259 §8.1: JSON is UTF-8)' }]);
    const b = await gw.post('/v1/chat/completions', latin({ ...chat, messages: [{ role: 'user', content: 'XX' }] }));
    expect([b.status, (await errorOf(b)).message]).toEqual([400, 'request body is not valid UTF-8 (RFC 8259 §8.1: JSON is UTF-8)']);
    const c = await gw.post('/v1/responses', latin({ model: 'gpt-4o', input: 'XX' }));
    expect(c.status).toBe(400);
    const d = await gw.post('/v1/messages', { ...messages, messages: [] });
    expect([d.status, d.headers.get('x-should-retry'), await errorOf(d)]).toEqual([400, 'false', { type: 'invalid_request_error', message: 'messages: at least one message is required' }]);
    expect(gw.up.seen).toHaveLength(0);
    expect(fields(rows(from))).toEqual([
      ['anthropic-messages', 400, 'invalid_request', 'claude-sonnet-4-5', 'anthropic'],
      ['openai-chat', 400, 'invalid_request', 'gpt-4o', 'openai-compatible'],
      ['openai-responses', 400, 'invalid_request', 'gpt-4o', 'openai-compatible'],
      ['anthropic-messages', 400, 'invalid_request', 'claude-sonnet-4-5', 'anthropic'],
    ]);
    // the same bodies in UTF-8 are served (the bytes alone were refused)
    expect((await gw.post('/v1/messages', { ...messages, messages: [{ role: 'user', content: '\u00ff\u00fe' }] })).status).toBe(200);
    expect(gw.up.seen).toHaveLength(1);
  });

  it('a bad body whose model has a route: the row names that route\'s provider, not the wire format\'s default (tester finding)', async () => {
    const gw = await gateway({
      openai: 'openai-compatible',
      config: { modelProviders: [{ pattern: 'gpt-*', provider: 'openai' }, { pattern: 'qwen*', provider: 'openai-compatible' }, { pattern: 'claude-*', provider: 'anthropic' }] },
    });
    const from = mark();
    for (const [path, body] of [
      ['/v1/chat/completions', { model: 'gpt-4o', messages: [] }],
      ['/v1/chat/completions', { model: 'claude-haiku-4-5', messages: [] }],
      ['/v1/messages', { model: 'qwen3-coder', messages: [] }],
      ['/v1/messages', { model: 'qwen3-coder', messages: [{ role: 'user', content: 'x' }] }], // no max_tokens
      ['/v1/responses', { model: 'no-route-matches', input: 1 }],
    ] as const) expect((await gw.post(path, body)).status, JSON.stringify(body)).toBe(400);
    expect(fields(rows(from))).toEqual([
      ['openai-chat', 400, 'invalid_request', 'gpt-4o', 'openai'],
      ['openai-chat', 400, 'invalid_request', 'claude-haiku-4-5', 'anthropic'],
      ['anthropic-messages', 400, 'invalid_request', 'qwen3-coder', 'openai-compatible'],
      ['anthropic-messages', 400, 'invalid_request', 'qwen3-coder', 'openai-compatible'],
      // no route: the wire format's own
      ['openai-responses', 400, 'invalid_request', 'no-route-matches', 'openai-compatible'],
    ]);
  });

  it('provider_not_configured: the row names the provider the route named (openai, openai-compatible), not scripted', async () => {
    // no OpenAI-format upstream at all on this server
    const gw = await gateway({ config: { modelProviders: [{ pattern: 'gpt-*', provider: 'openai' }, { pattern: 'qwen*', provider: 'openai-compatible' }, { pattern: 'claude-*', provider: 'anthropic' }] } });
    const from = mark();
    for (const [path, model] of [
      ['/v1/chat/completions', 'gpt-4o'],
      ['/v1/responses', 'qwen3-coder'],
    ] as const) {
      const res = await gw.post(path, path.endsWith('responses') ? { model, input: 'x' } : { model, messages: [{ role: 'user', content: 'x' }] });
      expect([res.status, (await errorOf(res)).code]).toEqual([400, 'provider_not_configured']);
    }
    expect(fields(rows(from))).toEqual([
      ['openai-chat', 400, 'provider_not_configured', 'gpt-4o', 'openai'],
      ['openai-responses', 400, 'provider_not_configured', 'qwen3-coder', 'openai-compatible'],
    ]);
  });
});

describe('the scripted model without a script for the agent', () => {
  it('400 no_script on every route, recorded as refused, the reservation settled at $0', async () => {
    const gw = await gateway({ config: { provider: 'scripted', anthropicApiKey: undefined, modelProviders: [{ pattern: '*', provider: 'scripted' }] } });
    const before = (await store.getTreeBudget(job.id, Date.now()))!;
    const from = mark();
    const a = await gw.post('/v1/messages', messages);
    expect([a.status, a.headers.get('x-should-retry'), (await errorOf(a)).type]).toEqual([400, 'false', 'invalid_request_error']);
    const b = await gw.post('/v1/chat/completions', chat);
    expect([b.status, (await errorOf(b)).code]).toEqual([400, 'no_script']);
    const c = await gw.post('/v1/responses', { model: 'gpt-4o', input: 'x', max_output_tokens: 10 });
    expect([c.status, (await errorOf(c)).code]).toEqual([400, 'no_script']);
    expect(fields(rows(from))).toEqual([
      ['anthropic-messages', 400, 'no_script', 'claude-sonnet-4-5', 'scripted'],
      ['openai-chat', 400, 'no_script', 'gpt-4o', 'scripted'],
      ['openai-responses', 400, 'no_script', 'gpt-4o', 'scripted'],
    ]);
    const after = (await store.getTreeBudget(job.id, Date.now()))!;
    expect([after.spentMicros, after.reservedMicros]).toEqual([before.spentMicros, 0]);
  });
});

describe('the scripted model whose script cannot be loaded', () => {
  it('500 on both wire formats, recorded as refused (script_error), the reservation settled at $0', async () => {
    const app = createGateway({
      store,
      config: { provider: 'scripted', anthropicBaseUrl: 'http://127.0.0.1:9', prices: loadPriceTable(), modelProviders: [{ pattern: '*', provider: 'scripted' }] },
      scriptFor: async () => {
        throw new Error('script.yaml: turns.0: bad');
      },
    });
    const server = await listenNode((req, res) => app.node(req, res));
    try {
      const before = (await store.getTreeBudget(job.id, Date.now()))!;
      const from = mark();
      const headers = { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}` };
      const a = await fetch(server.url + '/v1/messages', { method: 'POST', headers, body: JSON.stringify(messages) });
      expect([a.status, a.headers.get('x-should-retry'), (await errorOf(a)).type]).toEqual([500, 'false', 'api_error']);
      const b = await fetch(server.url + '/v1/chat/completions', { method: 'POST', headers, body: JSON.stringify(chat) });
      expect([b.status, (await errorOf(b)).message]).toEqual([500, 'scripted model: the script for agent "a" could not be loaded: script.yaml: turns.0: bad']);
      expect(fields(rows(from))).toEqual([
        ['anthropic-messages', 500, 'script_error', 'claude-sonnet-4-5', 'scripted'],
        ['openai-chat', 500, 'script_error', 'gpt-4o', 'scripted'],
      ]);
      const after = (await store.getTreeBudget(job.id, Date.now()))!;
      expect([after.spentMicros, after.reservedMicros]).toEqual([before.spentMicros, 0]);
    } finally {
      await server.close();
    }
  });
});
