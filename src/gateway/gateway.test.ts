import { Hono } from 'hono';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Logger } from '../core/log.js';
import { createGateway } from './gateway.js';
import { MemoryGatewayStore } from './memory-store.js';
import { loadPriceTable } from './prices.js';
import { parseModelScript } from './script.js';
import { listen, type TestServer } from './test-server.js';

const TOKEN = 'flj_gatewaytest_0123456789abcdef';
const script = parseModelScript({
  model: 'claude-sonnet-4-5',
  turns: [{ usage: { input_tokens: 10, output_tokens: 20, cache_creation_input_tokens: 30 }, content: [{ text: 'hi from {{job.branch}}' }] }],
});

/** A logger keeping every record (message + fields as JSON) so tests can look for leaks. */
function recordingLogger(lines: string[]): Logger {
  const l: Logger = {
    debug: (m, f) => void lines.push(m + JSON.stringify(f ?? {})),
    info: (m, f) => void lines.push(m + JSON.stringify(f ?? {})),
    warn: (m, f) => void lines.push(m + JSON.stringify(f ?? {})),
    error: (m, f) => void lines.push(m + JSON.stringify(f ?? {})),
    child: () => l,
  };
  return l;
}

function setup(scriptFor: () => Promise<ReturnType<typeof parseModelScript> | null> = async () => script) {
  const store = new MemoryGatewayStore();
  store.addJob(TOKEN, { id: 5, attempt: 2 });
  const logs: string[] = [];
  const app = createGateway({ store, config: { provider: 'scripted', anthropicBaseUrl: 'http://unused', prices: loadPriceTable() }, scriptFor, log: recordingLogger(logs) });
  return { store, app, logs };
}

const body = (extra: object = {}) => JSON.stringify({ model: 'claude-sonnet-4-5', max_tokens: 100, messages: [{ role: 'user', content: 'hello' }], ...extra });

describe('gateway auth', () => {
  it.each([
    ['no token', {}],
    ['an unknown x-api-key', { 'x-api-key': 'flj_nope_nope_nope_nope' }],
    ['an unknown bearer token', { authorization: 'Bearer flj_nope_nope_nope_nope' }],
  ])('answers 401 authentication_error with x-should-retry: false for %s', async (_name, headers) => {
    const { app, store } = setup();
    const res = await app.request('/v1/messages?beta=true', { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: body() });
    expect(res.status).toBe(401);
    expect(res.headers.get('x-should-retry')).toBe('false');
    const json = (await res.json()) as { type: string; error: { type: string; message: string } };
    expect(json.type).toBe('error');
    expect(json.error.type).toBe('authentication_error');
    expect(json.error.message.length).toBeGreaterThan(5);
    expect(store.calls).toHaveLength(0);
  });

  it('refuses a token once its job is gone', async () => {
    const { app, store } = setup();
    const ok = await app.request('/v1/messages', { method: 'POST', headers: { 'x-api-key': TOKEN }, body: body() });
    expect(ok.status).toBe(200);
    store.removeToken(TOKEN);
    const dead = await app.request('/v1/messages', { method: 'POST', headers: { 'x-api-key': TOKEN }, body: body() });
    expect(dead.status).toBe(401);
  });

  it('accepts Authorization: Bearer and never logs the token', async () => {
    const { app, logs } = setup();
    const res = await app.request('/v1/messages', { method: 'POST', headers: { authorization: `Bearer ${TOKEN}` }, body: body() });
    expect(res.status).toBe(200);
    await app.request('/v1/messages', { method: 'POST', headers: { 'x-api-key': TOKEN + 'x' }, body: body() });
    expect(logs.length).toBeGreaterThan(1);
    expect(logs.join('\n')).not.toContain('gatewaytest');
  });
});

describe('gateway requests', () => {
  it('rejects a non-JSON body and a body without messages with 400 naming the problem, recorded as refused and unbilled', async () => {
    const { app, store } = setup();
    const a = await app.request('/v1/messages', { method: 'POST', headers: { 'x-api-key': TOKEN }, body: '{oops' });
    expect(a.status).toBe(400);
    expect(((await a.json()) as { error: { type: string; message: string } }).error).toMatchObject({ type: 'invalid_request_error', message: expect.stringMatching(/not valid JSON/) });
    const b = await app.request('/v1/messages', { method: 'POST', headers: { 'x-api-key': TOKEN }, body: JSON.stringify({ model: 'm' }) });
    expect(b.status).toBe(400);
    expect(((await b.json()) as { error: { message: string } }).error.message).toMatch(/^messages:/);
    expect(store.calls.map((c) => [c.httpStatus, c.refused, c.costMicros, c.inputTokens])).toEqual([
      [400, 'invalid_request', 0, 0],
      [400, 'invalid_request', 0, 0],
    ]);
  });

  it('records one row per scripted call, streamed and not, priced from the table', async () => {
    const { app, store } = setup();
    const s = await app.request('/v1/messages?beta=true', { method: 'POST', headers: { 'x-api-key': TOKEN }, body: body({ stream: true }) });
    expect(s.status).toBe(200);
    const sse = await s.text();
    const text = [...sse.matchAll(/"text_delta","text":("(?:[^"\\]|\\.)*")/g)].map((m) => JSON.parse(m[1]!) as string).join('');
    expect(text).toBe('hi from flotilla/job-5');
    const j = await app.request('/v1/messages', { method: 'POST', headers: { 'x-api-key': TOKEN }, body: body() });
    expect(((await j.json()) as { content: { text: string }[] }).content[0]!.text).toBe('hi from flotilla/job-5');
    // sonnet 4.5: 10 × $3 + 20 × $15 + 30 × $3.75 per MTok = 30 + 300 + 112.5 µ$ = 442.5 → 443 µ$
    const expected = { jobId: 5, attempt: 2, provider: 'scripted', model: 'claude-sonnet-4-5', api: 'anthropic-messages', httpStatus: 200, inputTokens: 10, outputTokens: 20, cacheReadTokens: 0, cacheWriteTokens: 30, usageKnown: true, webSearchRequests: 0, costMicros: 443, costNanos: 442_500, runnerId: 1 };
    expect(store.calls).toEqual([
      { ...expected, streamed: true, startedAt: expect.any(Number), durationMs: expect.any(Number) },
      { ...expected, streamed: false, startedAt: expect.any(Number), durationMs: expect.any(Number) },
    ]);
  });

  it('refuses (400, not retried) when the agent has no script, so the job cannot succeed without a model', async () => {
    const { app, store } = setup(async () => null);
    const res = await app.request('/v1/messages', { method: 'POST', headers: { 'x-api-key': TOKEN }, body: body() });
    expect(res.status).toBe(400);
    expect(res.headers.get('x-should-retry')).toBe('false');
    const err = (await res.json()) as { type: string; error: { type: string; message: string } };
    expect(err.type).toBe('error');
    expect(err.error.type).toBe('invalid_request_error');
    expect(err.error.message).toBe(
      'scripted model: no script for agent "test-fixer", and model "claude-sonnet-4-5" is served by the scripted provider. Add a script.yaml beside the agent\'s agent.yaml (the folder it was loaded from: agents/test-fixer/ or the --agents folder), or send the model to a real provider: a route (flotilla models set PATTERN PROVIDER), or, with no route for it, the server\'s default, which is a real model once ANTHROPIC_API_KEY (OPENAI_API_KEY for OpenAI formats) is set on the server.',
    );
    const chat = await app.request('/v1/chat/completions', { method: 'POST', headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' }, body: JSON.stringify({ model: 'gpt-5', messages: [{ role: 'user', content: 'hi' }] }) });
    expect(chat.status).toBe(400);
    expect(((await chat.json()) as { error: { code: string; message: string } }).error).toMatchObject({ code: 'no_script', message: expect.stringMatching(/^scripted model: no script for agent "test-fixer", and model "gpt-5" is served by the scripted provider\./) });
    expect(store.calls.every((c) => c.costMicros === 0)).toBe(true);
  });

  it('answers 500 (no retry) when the script cannot be loaded', async () => {
    const { app } = setup(async () => {
      throw new Error('turns.0: bad');
    });
    const res = await app.request('/v1/messages', { method: 'POST', headers: { 'x-api-key': TOKEN }, body: body() });
    expect(res.status).toBe(500);
    expect(res.headers.get('x-should-retry')).toBe('false');
    expect(((await res.json()) as { error: { message: string } }).error.message).toMatch(/turns\.0: bad/);
  });

  it('estimates count_tokens offline and 404s other /v1 paths in Anthropic shape', async () => {
    const { app, store } = setup();
    const b = body();
    const ct = await app.request('/v1/messages/count_tokens', { method: 'POST', headers: { 'x-api-key': TOKEN }, body: b });
    expect(await ct.json()).toEqual({ input_tokens: Math.ceil(b.length / 4) });
    const nf = await app.request('/v1/complete', { method: 'POST', headers: { 'x-api-key': TOKEN }, body: b });
    expect(nf.status).toBe(404);
    expect(((await nf.json()) as { error: { type: string } }).error.type).toBe('not_found_error');
    // count_tokens is recorded at $0 (unbilled-call.ts); the 404 is no job's model call
    expect(store.calls.map((c) => [c.api, c.httpStatus, c.inputTokens, c.costMicros])).toEqual([['anthropic-count-tokens', 200, 0, 0]]);
  });
});

describe('gateway mounted on a real server', () => {
  let server: TestServer;
  beforeAll(async () => {
    const host = new Hono();
    host.route('/', setup().app);
    server = await listen(host.fetch);
  });
  afterAll(() => server.close());

  it("answers Claude Code's HEAD / preconnect at once", async () => {
    const t0 = Date.now();
    const res = await fetch(server.url + '/', { method: 'HEAD', signal: AbortSignal.timeout(2000) });
    expect([200, 404]).toContain(res.status);
    expect(Date.now() - t0).toBeLessThan(1000);
  });
});
