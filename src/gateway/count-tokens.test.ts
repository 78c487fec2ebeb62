/**
 * `POST /v1/messages/count_tokens` refuses what `/v1/messages` refuses (issue 3, "bad input"):
 * the same status and Anthropic error shape for a malformed body, a missing field, an unknown
 * model, a model of the other wire format and an oversize body; recorded as refused (api
 * `anthropic-count-tokens`); the upstream sees nothing. A good request is recorded too, not
 * billed (no tokens, $0). With the scripted provider and with the anthropic one (real HTTP, a fake upstream).
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GatewayConfig } from './config.js';
import { createGateway } from './gateway.js';
import { MemoryGatewayStore } from './memory-store.js';
import { loadPriceTable } from './prices.js';
import { listen, type TestServer } from './test-server.js';

const TOKEN = 'flj_counttokens_0123456789abcdef';
let upstream: Server;
let upstreamUrl = '';
const seen: string[] = [];

beforeAll(async () => {
  upstream = createServer((req, res) => {
    seen.push(req.url ?? '');
    req.resume();
    res.writeHead(200, { 'content-type': 'application/json' }).end('{"input_tokens":42}');
  });
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
  upstreamUrl = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((r) => upstream.close(() => r())));

const servers: TestServer[] = [];
afterAll(async () => {
  for (const s of servers) await s.close();
});

async function gateway(provider: GatewayConfig['provider']) {
  const store = new MemoryGatewayStore();
  store.addJob(TOKEN, { id: 9, budgetMicros: 10_000_000 });
  const config: GatewayConfig = {
    provider,
    ...(provider === 'anthropic' ? { anthropicApiKey: 'sk-ant-counttokens-0001' } : {}),
    anthropicBaseUrl: upstreamUrl,
    prices: loadPriceTable(),
    maxRequestBytes: 2000,
    modelProviders: [
      { pattern: 'claude-*', provider },
      { pattern: 'gpt-*', provider: 'openai' },
    ],
  };
  const gw = await listen(createGateway({ store, config, scriptFor: async () => null }).fetch);
  servers.push(gw);
  const post = async (path: string, body: string) => {
    const res = await fetch(gw.url + path, { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': TOKEN, 'anthropic-version': '2023-06-01' }, body });
    return { status: res.status, retry: res.headers.get('x-should-retry'), json: (await res.json()) as { type?: string; error?: { type: string; message: string }; input_tokens?: number } };
  };
  return { store, post };
}

const BAD: Array<[name: string, body: string, status: number, type: string, message: RegExp, refused: string]> = [
  ['a body that is not JSON', 'bad', 400, 'invalid_request_error', /request body is not valid JSON/, 'invalid_request'],
  ['messages not an array, no model', '{"messages":"x"}', 400, 'invalid_request_error', /^model: /, 'invalid_request'],
  ['messages not an array', '{"model":"claude-haiku-4-5","messages":"x"}', 400, 'invalid_request_error', /^messages: /, 'invalid_request'],
  // max_tokens: /v1/messages refuses a body without it before it looks at the model (count_tokens ignores it)
  ['an unknown model', '{"model":"llama-3","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}', 404, 'not_found_error', /unknown model "llama-3": no model route matches it/, 'unknown_model'],
  ['a model of the OpenAI formats', '{"model":"gpt-5","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}', 400, 'invalid_request_error', /call \/v1\/chat\/completions or \/v1\/responses/, 'wrong_format'],
  ['an oversize body', JSON.stringify({ model: 'claude-haiku-4-5', messages: [{ role: 'user', content: 'x'.repeat(3000) }] }), 413, 'request_too_large', /the limit is 2000/, 'too_large'],
];

describe.each(['scripted', 'anthropic'] as const)('count_tokens with the %s provider', (provider) => {
  it.each(BAD)('refuses %s as /v1/messages does, recorded as refused, upstream untouched', async (_name, body, status, type, message, refused) => {
    const { store, post } = await gateway(provider);
    const before = seen.length;
    const ct = await post('/v1/messages/count_tokens', body);
    const m = await post('/v1/messages', body);
    expect(ct.status).toBe(status);
    expect(ct.retry).toBe('false');
    expect(ct.json).toEqual({ type: 'error', error: { type, message: expect.stringMatching(message) } });
    // the very same reply /v1/messages gives
    expect([m.status, m.retry, m.json]).toEqual([ct.status, ct.retry, ct.json]);
    expect(seen.length).toBe(before);
    expect(store.calls.map((c) => [c.api, c.httpStatus, c.refused, c.costMicros])).toEqual([
      ['anthropic-count-tokens', status, refused, 0],
      ['anthropic-messages', status, refused, 0],
    ]);
  });

  it('answers a good request: recorded with no tokens, usage known, $0 (not billed)', async () => {
    const { store, post } = await gateway(provider);
    const body = '{"model":"claude-haiku-4-5","messages":[{"role":"user","content":"hi"}]}';
    const before = seen.length;
    const ct = await post('/v1/messages/count_tokens?beta=true', body);
    expect(ct.status).toBe(200);
    // scripted: ⌈bytes / 4⌉; anthropic: the upstream's answer
    expect(ct.json).toEqual({ input_tokens: provider === 'scripted' ? Math.ceil(body.length / 4) : 42 });
    expect(seen.slice(before)).toEqual(provider === 'scripted' ? [] : ['/v1/messages/count_tokens?beta=true']);
    expect(store.calls.map((c) => [c.api, c.provider, c.model, c.httpStatus, c.refused, c.inputTokens, c.outputTokens, c.usageKnown, c.costMicros])).toEqual([['anthropic-count-tokens', provider, 'claude-haiku-4-5', 200, undefined, 0, 0, true, 0]]);
  });
});
