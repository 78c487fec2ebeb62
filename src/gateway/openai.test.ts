/**
 * The OpenAI wire formats through the gateway (real HTTP): Chat Completions and Responses,
 * streamed and not, from the scripted model and through an `openai-compatible` upstream;
 * usage metered (OpenAI's cached tokens split out of the prompt figure), budget refusals in
 * OpenAI's shape, bad input in OpenAI's error shape.
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { createGateway } from './gateway.js';
import type { GatewayConfig } from './config.js';
import { MemoryGatewayStore } from './memory-store.js';
import { loadPriceTable } from './prices.js';
import type { ModelScript } from './script.js';
import { listen, type TestServer } from './test-server.js';

const TOKEN = 'flj_openai_0123456789abcdefghijkl';
// 4 input + 2,455 cache read + 23 output at sonnet-4-5 (3 / 0.30 / 15 µ$ per token) = 1,093.5 µ$
const SCRIPT: ModelScript = {
  model: 'claude-sonnet-4-5',
  turns: [
    { usage: { input_tokens: 4, output_tokens: 23, cache_read_input_tokens: 2455, cache_creation_input_tokens: 0 }, content: [{ text: 'Running the tests.' }, { tool_use: { name: 'exec_command', input: { cmd: 'npm test' } } }] },
    { usage: { input_tokens: 4, output_tokens: 23, cache_read_input_tokens: 2455, cache_creation_input_tokens: 0 }, content: [{ text: 'Done.' }] },
  ],
};

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});
afterAll(async () => undefined);

async function gateway(config: Partial<GatewayConfig> = {}, budgetMicros = 10_000_000) {
  const store = new MemoryGatewayStore();
  store.addJob(TOKEN, { id: 4, budgetMicros });
  const paused: number[] = [];
  const app = createGateway({
    store,
    config: { provider: 'scripted', anthropicBaseUrl: 'http://127.0.0.1:9', prices: loadPriceTable(), ...config },
    scriptFor: async () => SCRIPT,
    onBudgetExhausted: async (job) => void paused.push(job.id),
  });
  const gw: TestServer = await listen(app.fetch);
  cleanups.push(() => gw.close());
  const post = (path: string, body: unknown, headers: Record<string, string> = { authorization: `Bearer ${TOKEN}` }) =>
    fetch(gw.url + path, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: typeof body === 'string' ? body : JSON.stringify(body) });
  return { store, post, paused, url: gw.url };
}

const chat = (extra: object = {}) => ({ model: 'claude-sonnet-4-5', messages: [{ role: 'system', content: 'Working directory: /w' }, { role: 'user', content: 'fix it' }], ...extra });
const responses = (extra: object = {}) => ({ model: 'claude-sonnet-4-5', instructions: 'be brief', input: [{ type: 'message', role: 'user', content: [{ type: 'input_text', text: 'fix it' }] }], ...extra });

describe('OpenAI wire formats, scripted model', () => {
  it('Chat Completions non-streamed: the script turn as a chat.completion; usage metered exactly', async () => {
    const { store, post } = await gateway();
    const res = await post('/v1/chat/completions', chat());
    expect(res.status).toBe(200);
    const j = (await res.json()) as { object: string; choices: Array<{ message: { content: string; tool_calls: Array<{ function: { name: string; arguments: string } }> }; finish_reason: string }>; usage: Record<string, unknown> };
    expect(j.object).toBe('chat.completion');
    expect(j.choices[0]!.message.content).toBe('Running the tests.');
    expect(j.choices[0]!.message.tool_calls[0]!.function).toEqual({ name: 'exec_command', arguments: '{"cmd":"npm test"}' });
    expect(j.choices[0]!.finish_reason).toBe('tool_calls');
    // OpenAI counts cached tokens inside prompt_tokens: 4 + 2,455
    expect(j.usage).toMatchObject({ prompt_tokens: 2459, completion_tokens: 23, prompt_tokens_details: { cached_tokens: 2455 } });
    expect(store.calls[0]).toMatchObject({ api: 'openai-chat', streamed: false, inputTokens: 4, cacheReadTokens: 2455, outputTokens: 23, costMicros: 1094, costNanos: 1_093_500, usageKnown: true });
  });

  it('Chat Completions streamed without include_usage: no usage chunk reaches the client, the call is still metered; with it, it does', async () => {
    const { store, post } = await gateway();
    const a = await (await post('/v1/chat/completions', chat({ stream: true }))).text();
    expect(a.trim().endsWith('data: [DONE]')).toBe(true);
    expect(a).not.toContain('"prompt_tokens"');
    const b = await (await post('/v1/chat/completions', chat({ stream: true, stream_options: { include_usage: true } }))).text();
    expect(b).toContain('"prompt_tokens":2459');
    await expect.poll(() => store.calls.length).toBe(2);
    expect(store.calls.map((c) => [c.streamed, c.usageKnown, c.costMicros])).toEqual([
      [true, true, 1094],
      [true, true, 1094],
    ]);
  });

  it('Responses streamed and not (what Codex speaks): response.completed carries the usage; turns follow the input items', async () => {
    const { store, post } = await gateway();
    const nj = (await (await post('/v1/responses', responses())).json()) as { object: string; status: string; output: Array<{ type: string; name?: string }>; usage: Record<string, unknown> };
    expect(nj).toMatchObject({ object: 'response', status: 'completed' });
    expect(nj.output.map((o) => o.type)).toEqual(['message', 'function_call']);
    expect(nj.usage).toMatchObject({ input_tokens: 2459, input_tokens_details: { cached_tokens: 2455 }, output_tokens: 23 });
    // second turn: the input now holds the first turn's items and the tool output
    const input2 = [...responses().input, { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'Running the tests.' }] }, { type: 'function_call', call_id: 'c1', name: 'exec_command', arguments: '{}' }, { type: 'function_call_output', call_id: 'c1', output: 'ok' }];
    const sse = await (await post('/v1/responses', responses({ stream: true, input: input2 }))).text();
    const types = [...sse.matchAll(/^event: (\S+)$/gm)].map((m) => m[1]);
    expect(types[0]).toBe('response.created');
    expect(types.at(-1)).toBe('response.completed');
    expect(types).toContain('response.output_text.delta');
    expect(sse).toContain('"delta":"Done."');
    await expect.poll(() => store.calls.length).toBe(2);
    expect(store.calls.map((c) => [c.api, c.streamed, c.usageKnown, c.costMicros])).toEqual([
      ['openai-responses', false, true, 1094],
      ['openai-responses', true, true, 1094],
    ]);
  });

  it('bad input and missing tokens get OpenAI-shaped errors naming the problem; bad bodies are recorded as refused', async () => {
    const { store, post } = await gateway();
    const a = await post('/v1/chat/completions', '{nope');
    expect(a.status).toBe(400);
    expect(await a.json()).toEqual({ error: { message: 'request body is not valid JSON', type: 'invalid_request_error', param: null, code: null } });
    const b = await post('/v1/chat/completions', { model: 'm', messages: [] });
    expect(((await b.json()) as { error: { message: string; param: string } }).error).toMatchObject({ param: 'messages', message: expect.stringMatching(/^messages: /) });
    const c = await post('/v1/responses', { input: 'hi' });
    expect(((await c.json()) as { error: { param: string } }).error.param).toBe('model');
    const d = await post('/v1/responses', responses(), {});
    expect(d.status).toBe(401);
    expect(((await d.json()) as { error: { code: string } }).error.code).toBe('invalid_api_key');
    expect(store.calls.map((x) => [x.httpStatus, x.refused])).toEqual([
      [400, 'invalid_request'],
      [400, 'invalid_request'],
      [400, 'invalid_request'],
    ]);
  });

  it('a spent tree: 429 insufficient_quota (x-should-retry false) on both routes, streamed or not; the job is paused', async () => {
    const { store, post, paused } = await gateway({}, 1_000);
    for (const [path, body] of [
      ['/v1/chat/completions', chat()],
      ['/v1/chat/completions', chat({ stream: true })],
      ['/v1/responses', responses()],
      ['/v1/responses', responses({ stream: true })],
    ] as const) {
      const res = await post(path, body);
      expect(res.status).toBe(429);
      expect(res.headers.get('x-should-retry')).toBe('false');
      const e = (await res.json()) as { error: { type: string; code: string; message: string } };
      expect(e.error).toMatchObject({ type: 'insufficient_quota', code: 'insufficient_quota' });
      expect(e.error.message).toMatch(/budget of \$0\.001000, \$0\.000000 spent .* \$0\.001000 left; this call may cost up to/);
    }
    expect(paused).toEqual([4, 4, 4, 4]);
    expect(store.calls.every((c) => c.refused === 'budget' && c.costMicros === 0)).toBe(true);
  });
});

describe('OpenAI wire formats, openai-compatible upstream', () => {
  it('adds include_usage upstream, strips the usage chunk and the usage: null members for the client, meters it; key as Bearer, job token never sent', async () => {
    const seen: Array<{ url: string; auth: string | undefined; body: Record<string, unknown>; headers: IncomingMessage['headers'] }> = [];
    const up: Server = createServer((req: IncomingMessage, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        seen.push({ url: req.url ?? '', auth: req.headers.authorization, body: JSON.parse(body) as Record<string, unknown>, headers: req.headers });
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        const base = { id: 'c1', object: 'chat.completion.chunk', created: 1, model: 'qwen-local' };
        res.write(`data: ${JSON.stringify({ ...base, choices: [{ index: 0, delta: { role: 'assistant', content: 'hel' } }], usage: null })}\n\n`);
        res.write(`data: ${JSON.stringify({ ...base, choices: [{ index: 0, delta: { content: 'lo' }, finish_reason: 'stop' }], usage: null })}\n\n`);
        res.write(`data: ${JSON.stringify({ ...base, choices: [], usage: { prompt_tokens: 1000, completion_tokens: 200, prompt_tokens_details: { cached_tokens: 400 } } })}\n\n`);
        res.end('data: [DONE]\n\n');
      });
    });
    await new Promise<void>((r) => up.listen(0, '127.0.0.1', r));
    cleanups.push(() => new Promise((r) => up.close(() => r())));
    const prices = { version: 't', models: { 'qwen-local': { input: 1, output: 2, cacheWrite5m: 1, cacheWrite1h: 1, cacheRead: 0.5 } }, default: { input: 1, output: 2, cacheWrite5m: 1, cacheWrite1h: 1, cacheRead: 0.5 } };
    const { store, post } = await gateway({ prices, openai: { provider: 'openai-compatible', baseUrl: `http://127.0.0.1:${(up.address() as AddressInfo).port}/v1`, apiKeys: ['sk-local'] } });
    // the job's own choice of billed organization or project of the server's key is not forwarded (fresh-user finding)
    // a content-type that is not JSON goes upstream as application/json (fresh-user finding: sent as given)
    const headers = { authorization: `Bearer ${TOKEN}`, 'openai-organization': 'org-job', 'openai-project': 'proj_job', 'x-client-note': 'kept', 'content-type': 'application/x-www-form-urlencoded' };
    const text = await (await post('/v1/chat/completions', { model: 'qwen-local', stream: true, messages: [{ role: 'user', content: 'hi' }], custom_field: { keep: true } }, headers)).text();
    // exactly what OpenAI streams without include_usage: no usage-only chunk, no "usage": null (fresh-user finding)
    const base = { id: 'c1', object: 'chat.completion.chunk', created: 1, model: 'qwen-local' };
    expect(text).toBe(
      `data: ${JSON.stringify({ ...base, choices: [{ index: 0, delta: { role: 'assistant', content: 'hel' } }] })}\n\n` +
        `data: ${JSON.stringify({ ...base, choices: [{ index: 0, delta: { content: 'lo' }, finish_reason: 'stop' }] })}\n\n` +
        'data: [DONE]\n\n',
    );
    expect(seen[0]).toMatchObject({ url: '/v1/chat/completions', auth: 'Bearer sk-local' });
    expect([seen[0]!.headers['openai-organization'], seen[0]!.headers['openai-project'], seen[0]!.headers['x-client-note'], seen[0]!.headers['content-type']]).toEqual([undefined, undefined, 'kept', 'application/json']);
    expect(seen[0]!.body).toMatchObject({ stream_options: { include_usage: true }, custom_field: { keep: true } });
    // 600 input × 1 + 400 cached × 0.5 + 200 output × 2 = 600 + 200 + 400 = 1,200 µ$
    await expect.poll(() => store.calls.length).toBe(1);
    expect(store.calls[0]).toMatchObject({ provider: 'openai-compatible', model: 'qwen-local', inputTokens: 600, cacheReadTokens: 400, outputTokens: 200, costMicros: 1200, usageKnown: true });
  });

  it("the client's query goes upstream as sent, on both routes (Azure-style ?api-version=; it was dropped)", async () => {
    const urls: string[] = [];
    const up: Server = createServer((req: IncomingMessage, res) => {
      urls.push(req.url ?? '');
      req.resume();
      req.on('end', () => {
        res.writeHead(200, { 'content-type': 'application/json' });
        const usage = req.url!.startsWith('/v1/responses') ? { input_tokens: 10, output_tokens: 2, total_tokens: 12 } : { prompt_tokens: 10, completion_tokens: 2, total_tokens: 12 };
        res.end(JSON.stringify(req.url!.startsWith('/v1/responses') ? { id: 'r1', object: 'response', status: 'completed', output: [], usage } : { id: 'c1', object: 'chat.completion', choices: [], usage }));
      });
    });
    await new Promise<void>((r) => up.listen(0, '127.0.0.1', r));
    cleanups.push(() => new Promise((r) => up.close(() => r())));
    const { store, post } = await gateway({ openai: { provider: 'openai-compatible', baseUrl: `http://127.0.0.1:${(up.address() as AddressInfo).port}/v1`, apiKeys: [] } });
    expect((await post('/v1/chat/completions?api-version=2024-10-21', { model: 'qwen-local', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] })).status).toBe(200);
    expect((await post('/v1/responses?x=1&y=%20', { model: 'qwen-local', max_output_tokens: 10, input: 'hi' })).status).toBe(200);
    expect((await post('/v1/chat/completions', { model: 'qwen-local', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] })).status).toBe(200);
    expect(urls).toEqual(['/v1/chat/completions?api-version=2024-10-21', '/v1/responses?x=1&y=%20', '/v1/chat/completions']);
    await expect.poll(() => store.calls.length).toBe(3);
  });
});

describe('OpenAI formats: the output bound reserved for is the one the upstream keeps', () => {
  /** An upstream answering every call with a small JSON reply; `seen` has each body it got, as text. */
  async function upstream() {
    const seen: string[] = [];
    const up: Server = createServer((req: IncomingMessage, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        seen.push(body);
        res.writeHead(200, { 'content-type': 'application/json' });
        const reply = req.url?.endsWith('/responses')
          ? { id: 'r1', object: 'response', status: 'completed', model: 'qwen-local', output: [], usage: { input_tokens: 10, output_tokens: 5, input_tokens_details: { cached_tokens: 0 } } }
          : { id: 'c1', object: 'chat.completion', created: 1, model: 'qwen-local', choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }], usage: { prompt_tokens: 10, completion_tokens: 5 } };
        res.end(JSON.stringify(reply));
      });
    });
    await new Promise<void>((r) => up.listen(0, '127.0.0.1', r));
    cleanups.push(() => new Promise((r) => up.close(() => r())));
    return { seen, baseUrl: `http://127.0.0.1:${(up.address() as AddressInfo).port}/v1` };
  }
  // 1 µ$ per input token (and cache write), 2 µ$ per output token
  const prices = { version: 't', models: {}, default: { input: 1, output: 2, cacheWrite5m: 1, cacheWrite1h: 1, cacheRead: 0.5 } };
  const msg = [{ role: 'user', content: 'hi' }];

  it('a request without an output limit gets the one reserved for (32,000 tokens), in the field its server knows; one with a limit goes through as sent', async () => {
    for (const provider of ['openai', 'openai-compatible'] as const) {
      const { seen, baseUrl } = await upstream();
      const { post } = await gateway({ prices, openai: { provider, baseUrl, apiKeys: ['sk-x'] } });
      expect((await post('/v1/chat/completions', { model: 'qwen-local', messages: msg, custom: 1 })).status).toBe(200);
      expect((await post('/v1/responses', { model: 'qwen-local', input: 'hi' })).status).toBe(200);
      expect((await post('/v1/responses', { model: 'qwen-local', input: 'hi', max_output_tokens: null })).status).toBe(200);
      const sent = { model: 'qwen-local', messages: msg, max_tokens: 100 };
      expect((await post('/v1/chat/completions', sent)).status).toBe(200);
      const field = provider === 'openai' ? 'max_completion_tokens' : 'max_tokens';
      expect(seen[0]).toBe(`{"${field}":32000,${JSON.stringify({ model: 'qwen-local', messages: msg, custom: 1 }).slice(1)}`);
      expect(JSON.parse(seen[1]!)).toEqual({ model: 'qwen-local', input: 'hi', max_output_tokens: 32000 });
      expect(JSON.parse(seen[2]!)).toEqual({ model: 'qwen-local', input: 'hi', max_output_tokens: 32000 });
      expect(seen[3]).toBe(JSON.stringify(sent));
    }
  });

  it('a member the gateway must edit, given twice, or a body that is not UTF-8 where it must edit: refused 400 naming it, the upstream sees nothing, recorded as refused at $0', async () => {
    // fresh-user finding: `"max_output_tokens":null` twice went upstream as 32000 then null (a
    // last-wins upstream had no limit: spend past the budget); `stream_options` twice kept the client's include_usage: false
    const { seen, baseUrl } = await upstream();
    const { post, store, url } = await gateway({ prices, openai: { provider: 'openai-compatible', baseUrl, apiKeys: ['sk-x'] } });
    const cases: Array<[path: string, body: string | Buffer, param: string | null]> = [
      ['/v1/responses', '{"model":"qwen-local","input":"x","max_output_tokens":null,"max_output_tokens":null}', 'max_output_tokens'],
      ['/v1/chat/completions', '{"model":"qwen-local","messages":[{"role":"user","content":"x"}],"max_tokens":100,"stream":true,"stream_options":{"include_usage":true},"stream_options":{"include_usage":false}}', 'stream_options'],
      ['/v1/chat/completions', '{"model":"qwen-local","messages":[{"role":"user","content":"x"}],"max_tokens":100,"stream":true,"stream_options":{"include_usage":false,"include_usage":false}}', 'stream_options.include_usage'],
      ['/v1/responses', Buffer.concat([Buffer.from('{"model":"qwen-local","max_output_tokens":null,"input":"a'), Buffer.from([0xff]), Buffer.from('b"}')]), null],
    ];
    for (const [path, body, param] of cases) {
      const res = await fetch(url + path, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}` }, body: typeof body === 'string' ? body : new Uint8Array(body) });
      const text = await res.text();
      const json = JSON.parse(text) as { error: { type: string; param: string | null; message: string } };
      if (!json.error) throw new Error(`${res.status} ${text}`);
      expect([res.status, json.error.type, json.error.param], String(body)).toEqual([400, 'invalid_request_error', param]);
      expect(json.error.message).toBe(param === null ? 'request body is not valid UTF-8 (RFC 8259 §8.1: JSON is UTF-8)' : `${param}: given twice in the request body; give each field once`);
    }
    expect(seen).toEqual([]);
    await expect.poll(() => store.calls.filter((c) => c.refused === 'invalid_request').length).toBe(cases.length);
    expect(store.calls.every((c) => c.costMicros === 0)).toBe(true);
    // the same members given once are edited as usual; a body not UTF-8 that needs no edit goes as sent (spliced, byte for byte)
    expect((await post('/v1/responses', { model: 'qwen-local', input: 'x', max_output_tokens: null })).status).toBe(200);
    expect(JSON.parse(seen[0]!)).toEqual({ model: 'qwen-local', input: 'x', max_output_tokens: 32000 });
  });

  it('n choices reserve n times the output limit: what would not fit is refused and never reaches the upstream', async () => {
    const { seen, baseUrl } = await upstream();
    // 5,000 µ$: n=2 × 1,000 tokens × 2 µ$ = 4,000 µ$ + the input estimate fits; n=3 (6,000 µ$) does not
    const { post, paused } = await gateway({ prices, openai: { provider: 'openai-compatible', baseUrl, apiKeys: ['sk-x'] } }, 5_000);
    const three = await post('/v1/chat/completions', { model: 'qwen-local', messages: msg, max_tokens: 1000, n: 3 });
    expect(three.status).toBe(429);
    expect(((await three.json()) as { error: { code: string } }).error.code).toBe('insufficient_quota');
    expect(seen).toEqual([]);
    expect(paused).toEqual([4]);
    const bad = await post('/v1/chat/completions', { model: 'qwen-local', messages: msg, max_tokens: 1000, n: 0 });
    expect(bad.status).toBe(400);
  });
});

describe('model → provider mapping through the routes', () => {
  it('unknown models get each format\'s not-found error, a model of the other format is pointed to its route; all recorded as refused', async () => {
    const routes = [
      { pattern: 'claude-*', provider: 'scripted' as const },
      { pattern: 'gpt-*', provider: 'openai-compatible' as const },
    ];
    const { store, post } = await gateway({ modelProviders: routes });
    const a = await post('/v1/messages', { model: 'llama-3', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] }, { 'x-api-key': TOKEN });
    expect(a.status).toBe(404);
    expect(((await a.json()) as { error: { type: string; message: string } }).error).toMatchObject({ type: 'not_found_error', message: expect.stringMatching(/unknown model "llama-3"/) });
    const b = await post('/v1/chat/completions', { model: 'llama-3', messages: [{ role: 'user', content: 'hi' }] });
    expect(b.status).toBe(404);
    expect(((await b.json()) as { error: { code: string; param: string } }).error).toMatchObject({ code: 'model_not_found', param: 'model' });
    const c = await post('/v1/messages', { model: 'gpt-5', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] }, { 'x-api-key': TOKEN });
    expect(c.status).toBe(400);
    expect(((await c.json()) as { error: { message: string } }).error.message).toMatch(/call \/v1\/chat\/completions or \/v1\/responses/);
    // gpt-* maps to openai-compatible, which this server does not have configured
    const d = await post('/v1/chat/completions', { model: 'gpt-5', messages: [{ role: 'user', content: 'hi' }] });
    expect(d.status).toBe(400);
    // claude-* → scripted answers on both formats
    expect((await post('/v1/chat/completions', chat())).status).toBe(200);
    expect(store.calls.map((x) => [x.httpStatus, x.refused ?? null])).toEqual([
      [404, 'unknown_model'],
      [404, 'unknown_model'],
      [400, 'wrong_format'],
      [400, 'provider_not_configured'],
      [200, null],
    ]);
  });
});
