/**
 * `GET /v1/models` and `GET /v1/models/{id}` through the control plane's HTTP server
 * (gateway/list-models.ts): the models a job can call, in the asking client's wire format, only
 * those a route sends to a configured provider of that format; Anthropic's paging; the job token
 * required; nothing recorded in the ledger.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runningJob, startTestServer, TEST_GATEWAY, type TestServer } from './test-helpers.js';

const P = { input: 3, output: 15, cacheWrite5m: 3.75, cacheWrite1h: 6, cacheRead: 0.3 };
let t: TestServer;
let token: string;
let jobId: number;

beforeAll(async () => {
  t = await startTestServer({
    gateway: {
      ...TEST_GATEWAY,
      provider: 'anthropic',
      anthropicApiKey: 'sk-ant-models-test-key',
      openai: { provider: 'openai-compatible', baseUrl: 'http://127.0.0.1:9/v1', apiKeys: [] },
      prices: { version: '2026-12-02', models: { 'claude-sonnet-4-5': P, 'claude-haiku-4-5': P, 'gpt-5': P, 'qwen3-coder': P, 'llama-3': P }, default: P },
      // gpt-* goes to openai, which has no key here: not offered; llama-3 matches no route
      modelProviders: [
        { pattern: 'claude-*', provider: 'anthropic' },
        { pattern: 'gpt-*', provider: 'openai' },
        { pattern: 'qwen*', provider: 'openai-compatible' },
        { pattern: 'my-local', provider: 'scripted' },
      ],
    },
  });
  const r = await runningJob(t, 1, 'sess-models');
  token = r.token;
  jobId = r.job.id;
});
afterAll(async () => {
  await t.close();
});

const ANTHROPIC = { 'anthropic-version': '2023-06-01' };
const CREATED_AT = '2026-12-02T00:00:00Z';
const CREATED = 1796169600; // 2026-12-02T00:00:00Z in Unix seconds

async function get(path: string, headers: Record<string, string>): Promise<[number, unknown]> {
  const res = await fetch(t.url + path, { headers });
  return [res.status, await res.json()];
}

const claude = (id: string) => ({ type: 'model', id, display_name: id, created_at: CREATED_AT });

describe('GET /v1/models', () => {
  it('Anthropic format: the models routed to anthropic (configured) or scripted, in id order', async () => {
    expect(await get('/v1/models', { ...ANTHROPIC, 'x-api-key': token })).toEqual([
      200,
      { data: [claude('claude-haiku-4-5'), claude('claude-sonnet-4-5'), claude('my-local')], has_more: false, first_id: 'claude-haiku-4-5', last_id: 'my-local' },
    ]);
  });

  it('OpenAI format: the models routed to a configured OpenAI-format provider or scripted', async () => {
    expect(await get('/v1/models', { authorization: `Bearer ${token}` })).toEqual([
      200,
      {
        object: 'list',
        data: [
          { id: 'my-local', object: 'model', created: CREATED, owned_by: 'scripted' },
          { id: 'qwen3-coder', object: 'model', created: CREATED, owned_by: 'openai-compatible' },
        ],
      },
    ]);
  });

  it("Anthropic's paging: limit, after_id, before_id; bad values named", async () => {
    const h = { ...ANTHROPIC, 'x-api-key': token };
    expect(await get('/v1/models?limit=1', h)).toEqual([200, { data: [claude('claude-haiku-4-5')], has_more: true, first_id: 'claude-haiku-4-5', last_id: 'claude-haiku-4-5' }]);
    expect(await get('/v1/models?limit=1&after_id=claude-haiku-4-5', h)).toEqual([200, { data: [claude('claude-sonnet-4-5')], has_more: true, first_id: 'claude-sonnet-4-5', last_id: 'claude-sonnet-4-5' }]);
    expect(await get('/v1/models?after_id=claude-sonnet-4-5', h)).toEqual([200, { data: [claude('my-local')], has_more: false, first_id: 'my-local', last_id: 'my-local' }]);
    expect(await get('/v1/models?after_id=zzz', h)).toEqual([200, { data: [], has_more: false, first_id: null, last_id: null }]);
    expect(await get('/v1/models?limit=1&before_id=my-local', h)).toEqual([200, { data: [claude('claude-sonnet-4-5')], has_more: true, first_id: 'claude-sonnet-4-5', last_id: 'claude-sonnet-4-5' }]);
    expect(await get('/v1/models?before_id=claude-sonnet-4-5', h)).toEqual([200, { data: [claude('claude-haiku-4-5')], has_more: false, first_id: 'claude-haiku-4-5', last_id: 'claude-haiku-4-5' }]);
    for (const bad of ['0', '1001', 'abc', '-1', '1.5']) {
      expect(await get(`/v1/models?limit=${bad}`, h)).toEqual([400, { type: 'error', error: { type: 'invalid_request_error', message: `limit: must be a whole number from 1 to 1000, got "${bad}"` } }]);
    }
    expect(await get('/v1/models?after_id=a&before_id=b', h)).toEqual([400, { type: 'error', error: { type: 'invalid_request_error', message: 'after_id and before_id: give at most one of them' } }]);
  });

  it('one model by id; one not offered in that format is a 404 in it', async () => {
    expect(await get('/v1/models/claude-sonnet-4-5', { ...ANTHROPIC, 'x-api-key': token })).toEqual([200, claude('claude-sonnet-4-5')]);
    expect(await get('/v1/models/qwen3-coder', { authorization: `Bearer ${token}` })).toEqual([200, { id: 'qwen3-coder', object: 'model', created: CREATED, owned_by: 'openai-compatible' }]);
    const [s1, b1] = await get('/v1/models/qwen3-coder', { ...ANTHROPIC, 'x-api-key': token });
    expect(s1).toBe(404);
    expect(b1).toMatchObject({ type: 'error', error: { type: 'not_found_error' } });
    expect((b1 as { error: { message: string } }).error.message).toContain('"qwen3-coder" is not offered');
    // a name only the pattern qwen* matches (in no listing): found as a call naming it is routed (fresh-tester finding: 404 "no route sends it")
    expect(await get('/v1/models/qwen3%3A8b', { authorization: `Bearer ${token}` })).toEqual([200, { id: 'qwen3:8b', object: 'model', created: CREATED, owned_by: 'openai-compatible' }]);
    expect(await get('/v1/models/claude-opus-9', { ...ANTHROPIC, 'x-api-key': token })).toEqual([200, claude('claude-opus-9')]);
    expect((await get('/v1/models/qwen3%3A8b', { ...ANTHROPIC, 'x-api-key': token }))[0]).toBe(404);
    for (const id of ['gpt-5', 'gpt-5-mini', 'llama-3', 'nothing']) {
      const [s, b] = await get(`/v1/models/${id}`, { authorization: `Bearer ${token}` });
      expect(s).toBe(404);
      expect(b).toMatchObject({ error: { type: 'invalid_request_error', code: 'model_not_found', param: 'model' } });
    }
  });

  it('needs a live job token; listing records nothing in the ledger', async () => {
    expect(await get('/v1/models', ANTHROPIC)).toEqual([401, { type: 'error', error: { type: 'authentication_error', message: 'missing job token: send it as x-api-key or Authorization: Bearer' } }]);
    expect(await get('/v1/models', { authorization: 'Bearer flj_not_a_live_token_0000000000' })).toEqual([
      401,
      { error: { message: 'invalid job token: unknown, or its job is no longer running', type: 'invalid_request_error', param: null, code: 'invalid_api_key' } },
    ]);
    expect(await t.store.jobUsage(jobId)).toMatchObject({ modelCalls: 0, costMicros: 0 });
  });
});
