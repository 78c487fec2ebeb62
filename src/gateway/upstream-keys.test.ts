/**
 * The server's upstream keys (issue 3): every upstream call, on every route and provider,
 * carries exactly ONE key of the configured rotation; no key ever reaches a job, even when the
 * upstream echoes it (error bodies, headers, an error event mid-stream split across chunks);
 * and a provider with no key gets one clear, non-retried refusal with the upstream untouched.
 * Real HTTP: a fake upstream server, the gateway on its own port, configuration from an
 * environment as `flotilla up` reads it.
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { loadGatewayConfig } from './config.js';
import { createGateway } from './gateway.js';
import { MemoryGatewayStore } from './memory-store.js';
import { listen } from './test-server.js';

const TOKEN = 'flj_upstreamkeys_0123456789abcdef';
const ANT = ['sk-ant-api03-aaaaaaaaaaaaaaaaaaaa-1111', 'sk-ant-api03-bbbbbbbbbbbbbbbbbbbb-2222'];
const OAI = ['sk-proj-cccccccccccccccccccccc-3333', 'sk-proj-dddddddddddddddddddddd-4444'];
const ALL = [...ANT, ...OAI];

type Mode = 'ok' | 'echo400' | 'echoMidStream';
interface Seen {
  path: string;
  xApiKey: string | undefined;
  authorization: string | undefined;
}

/** The key the upstream received on this request (x-api-key, or the Bearer credential). */
function keyOf(req: IncomingMessage): string {
  return (req.headers['x-api-key'] as string | undefined) ?? (req.headers.authorization ?? '').replace(/^Bearer /, '');
}

/** A fake upstream speaking both Anthropic (/v1/messages…) and OpenAI (/v1/chat/completions, /v1/responses). */
async function fakeUpstream(mode: Mode) {
  const seen: Seen[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const path = req.url ?? '';
      seen.push({ path, xApiKey: req.headers['x-api-key'] as string | undefined, authorization: req.headers.authorization });
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}') as { stream?: boolean };
      const key = keyOf(req);
      const openai = !path.startsWith('/v1/messages');
      if (mode === 'echo400') {
        // An upstream error echoing the key (or its Bearer line), as the real APIs' 401 for a bad
        // key does; a 401/403 itself never reaches a job (upstream-auth.ts, upstream-auth.test.ts),
        // so the echo comes with a 400 here, which is passed on (masked).
        const text = openai
          ? JSON.stringify({ error: { message: `Incorrect API key provided: ${req.headers.authorization}. You can find your API key at https://platform.openai.com/account/api-keys.`, type: 'invalid_request_error', param: null, code: 'invalid_api_key' } })
          : JSON.stringify({ type: 'error', error: { type: 'authentication_error', message: `invalid x-api-key: ${key}` } });
        res.writeHead(400, { 'content-type': 'application/json', 'x-upstream-saw': key });
        res.end(text);
        return;
      }
      if (mode === 'echoMidStream') {
        // A 200 stream whose error event carries the key, the key split across two writes.
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write('event: message_start\ndata: {"type":"message_start","message":{"id":"m","type":"message","role":"assistant","model":"claude-haiku-4-5","content":[],"usage":{"input_tokens":3,"output_tokens":1}}}\n\n');
        const event = `event: error\ndata: ${JSON.stringify({ type: 'error', error: { type: 'api_error', message: `upstream trouble with key ${key}` } })}\n\n`;
        const cut = event.indexOf(key) + 9;
        res.write(event.slice(0, cut));
        setTimeout(() => res.end(event.slice(cut)), 30);
        return;
      }
      if (path.startsWith('/v1/messages/count_tokens')) return void res.writeHead(200, { 'content-type': 'application/json' }).end('{"input_tokens":7}');
      if (path.startsWith('/v1/messages') && body.stream) {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.end(
          'event: message_start\ndata: {"type":"message_start","message":{"id":"m","type":"message","role":"assistant","model":"claude-haiku-4-5","content":[],"usage":{"input_tokens":3,"output_tokens":1}}}\n\n' +
            'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":2}}\n\nevent: message_stop\ndata: {"type":"message_stop"}\n\n',
        );
        return;
      }
      if (path.startsWith('/v1/messages')) return void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ id: 'm', type: 'message', role: 'assistant', model: 'claude-haiku-4-5', content: [{ type: 'text', text: 'ok' }], stop_reason: 'end_turn', usage: { input_tokens: 3, output_tokens: 2 } }));
      if (path.endsWith('/chat/completions')) return void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ id: 'c', object: 'chat.completion', model: 'gpt-5', choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }], usage: { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 } }));
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ id: 'r', object: 'response', status: 'completed', model: 'gpt-5', output: [], usage: { input_tokens: 3, output_tokens: 2, total_tokens: 5 } }));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen, close: () => new Promise<void>((r) => server.close(() => r())) };
}

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** A gateway configured from `env` (plus the fake upstream's URLs), serving one running job. */
async function gateway(mode: Mode, env: Record<string, string>) {
  const up = await fakeUpstream(mode);
  cleanups.push(up.close);
  const config = loadGatewayConfig({ ANTHROPIC_BASE_URL: up.url, OPENAI_BASE_URL: `${up.url}/v1`, FLOTILLA_GATEWAY_RETRIES: '0', ...env });
  const store = new MemoryGatewayStore();
  store.addJob(TOKEN, { id: 3, budgetMicros: 10_000_000 });
  const gw = await listen(createGateway({ store, config, scriptFor: async () => null }).fetch);
  cleanups.push(gw.close);
  const post = (path: string, body: object, auth: Record<string, string>) =>
    fetch(gw.url + path, { method: 'POST', headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01', ...auth }, body: JSON.stringify(body) });
  return { up, store, post };
}

const BOTH = { ANTHROPIC_API_KEY: ANT.join(','), OPENAI_API_KEY: OAI.join(', '), FLOTILLA_MODEL_PROVIDERS: 'claude-*=anthropic,gpt-*=openai' };
const msg = (extra: object = {}) => ({ model: 'claude-haiku-4-5', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }], ...extra });
const chat = (extra: object = {}) => ({ model: 'gpt-5', messages: [{ role: 'user', content: 'hi' }], ...extra });
const resp = (extra: object = {}) => ({ model: 'gpt-5', input: 'hi', ...extra });
const XKEY = { 'x-api-key': TOKEN };
const BEARER = { authorization: `Bearer ${TOKEN}` };

/** Every route, streamed or not, in each credential form the harnesses use. */
const CALLS: Array<[string, string, object, Record<string, string>]> = [
  ['messages', '/v1/messages', msg(), XKEY],
  ['messages streamed', '/v1/messages?beta=true', msg({ stream: true }), BEARER],
  ['count_tokens', '/v1/messages/count_tokens', msg(), XKEY],
  ['count_tokens (beta, Bearer)', '/v1/messages/count_tokens?beta=true', msg(), BEARER],
  ['chat completions', '/v1/chat/completions', chat(), BEARER],
  ['responses', '/v1/responses', resp(), BEARER],
];

describe('upstream keys: exactly one key of the rotation per upstream call', () => {
  it('every route and provider (anthropic, openai) sends one configured key, never the comma-separated list, and rotates', async () => {
    const { up, post } = await gateway('ok', BOTH);
    for (let round = 0; round < 2; round++) {
      for (const [name, path, body, auth] of CALLS) {
        const res = await post(path, body, auth);
        expect(res.status, name).toBe(200);
        await res.arrayBuffer();
      }
    }
    expect(up.seen).toHaveLength(2 * CALLS.length);
    const anthropic = up.seen.filter((s) => s.path.startsWith('/v1/messages'));
    const openai = up.seen.filter((s) => !s.path.startsWith('/v1/messages'));
    expect(anthropic).toHaveLength(8);
    for (const s of anthropic) {
      expect(ANT).toContain(s.xApiKey);
      expect(s.authorization).toBeUndefined();
    }
    for (const s of openai) {
      expect(OAI.map((k) => `Bearer ${k}`)).toContain(s.authorization);
      expect(s.xApiKey).toBeUndefined();
    }
    // count_tokens takes its key from the same rotation: both keys are used across its calls
    expect(new Set(anthropic.map((s) => s.xApiKey))).toEqual(new Set(ANT));
    // (the ring is shared with /v1/messages: messages a, b, then count_tokens a, b)
    expect(up.seen.filter((s) => s.path.includes('count_tokens')).map((s) => s.xApiKey)).toEqual([ANT[0], ANT[1], ANT[0], ANT[1]]);
    expect(new Set(openai.map((s) => s.authorization))).toEqual(new Set(OAI.map((k) => `Bearer ${k}`)));
  });

  it('openai-compatible: one key of FLOTILLA_OPENAI_COMPATIBLE_KEY per call, rotating', async () => {
    const keys = ['local-key-eeeeeeeeeeee-5555', 'local-key-ffffffffffff-6666'];
    const up0 = await fakeUpstream('ok');
    cleanups.push(up0.close);
    const { up, post } = await gateway('ok', { FLOTILLA_OPENAI_COMPATIBLE_URL: `${up0.url}/v1`, FLOTILLA_OPENAI_COMPATIBLE_KEY: keys.join(','), FLOTILLA_MODEL_PROVIDERS: 'gpt-*=openai-compatible' });
    for (let i = 0; i < 2; i++) {
      expect((await post('/v1/chat/completions', chat(), BEARER)).status).toBe(200);
      expect((await post('/v1/responses', resp(), BEARER)).status).toBe(200);
    }
    expect(up.seen).toHaveLength(0);
    expect(up0.seen.map((s) => s.authorization)).toEqual([`Bearer ${keys[0]}`, `Bearer ${keys[1]}`, `Bearer ${keys[0]}`, `Bearer ${keys[1]}`]);
  });
});

/** True when `text` holds any configured key. */
const leaks = (text: string) => ALL.filter((k) => text.includes(k));

describe('upstream keys never reach a job', () => {
  it('an upstream error echoing the key (body and header) is masked on every route and provider, each key as [redacted key ...last 4]', async () => {
    const { up, store, post } = await gateway('echo400', BOTH);
    for (const [name, path, body, auth] of CALLS) {
      const res = await post(path, body, auth);
      expect(res.status, name).toBe(400);
      const text = await res.text();
      const headers = JSON.stringify([...res.headers]);
      expect(leaks(text), name).toEqual([]);
      expect(leaks(headers), name).toEqual([]);
      const sent = keyOf({ headers: { 'x-api-key': up.seen.at(-1)!.xApiKey, authorization: up.seen.at(-1)!.authorization } } as unknown as IncomingMessage);
      expect(text, name).toContain(`[redacted key ...${sent.slice(-4)}]`);
      expect(res.headers.get('x-upstream-saw'), name).toBe(`[redacted key ...${sent.slice(-4)}]`);
      // still the upstream's JSON, in its own shape
      expect(() => JSON.parse(text) as unknown, name).not.toThrow();
    }
    expect(up.seen).toHaveLength(CALLS.length);
    expect(store.calls.filter((c) => c.httpStatus === 400)).toHaveLength(CALLS.length); // every call recorded (count_tokens at $0)
  });

  it('an error event mid-stream carrying the key, split across two chunks, is masked; the rest of the stream is untouched', async () => {
    const { up, post } = await gateway('echoMidStream', BOTH);
    const res = await post('/v1/messages', msg({ stream: true }), XKEY);
    expect(res.status).toBe(200);
    const text = await res.text();
    expect(leaks(text)).toEqual([]);
    const sent = up.seen[0]!.xApiKey!;
    expect(text).toContain(`upstream trouble with key [redacted key ...${sent.slice(-4)}]`);
    expect(text.startsWith('event: message_start\ndata: {"type":"message_start"')).toBe(true);
    expect(text.endsWith('\n\n')).toBe(true);
  });
});

describe('a provider without its key', () => {
  it('anthropic (no ANTHROPIC_API_KEY): 500 api_error, x-should-retry: false, naming the provider and the setting; upstream untouched; recorded as refused', async () => {
    const { up, store, post } = await gateway('ok', { FLOTILLA_MODEL_PROVIDERS: 'claude-*=anthropic,gpt-*=openai' });
    for (const [path, body] of [
      ['/v1/messages', msg()],
      ['/v1/messages', msg({ stream: true })],
      ['/v1/messages/count_tokens', msg()],
    ] as const) {
      const res = await post(path, body, XKEY);
      expect(res.status, path).toBe(500);
      expect(res.headers.get('x-should-retry'), path).toBe('false');
      const err = (await res.json()) as { type: string; error: { type: string; message: string } };
      expect(err.type).toBe('error');
      expect(err.error.type).toBe('api_error');
      expect(err.error.message).toMatch(/model "claude-haiku-4-5" maps to provider anthropic, which is not configured on this server: set ANTHROPIC_API_KEY/);
    }
    expect(up.seen).toHaveLength(0);
    expect(store.calls.map((c) => [c.api, c.httpStatus, c.refused])).toEqual([
      ['anthropic-messages', 500, 'provider_not_configured'],
      ['anthropic-messages', 500, 'provider_not_configured'],
      ['anthropic-count-tokens', 500, 'provider_not_configured'],
    ]);
  });

  it('anthropic as the configured default provider with no key: refused the same way, nothing sent with an empty key', async () => {
    const up = await fakeUpstream('ok');
    cleanups.push(up.close);
    const store = new MemoryGatewayStore();
    store.addJob(TOKEN, { id: 3 });
    const base = loadGatewayConfig({ ANTHROPIC_BASE_URL: up.url });
    const app = createGateway({ store, config: { ...base, provider: 'anthropic' }, scriptFor: async () => null });
    const res = await app.request('/v1/messages', { method: 'POST', headers: XKEY, body: JSON.stringify(msg()) });
    expect(res.status).toBe(500);
    expect(res.headers.get('x-should-retry')).toBe('false');
    expect(((await res.json()) as { error: { message: string } }).error.message).toMatch(/provider anthropic.*ANTHROPIC_API_KEY/);
    expect(up.seen).toHaveLength(0);
  });

  it('openai (no OPENAI_API_KEY): 400 provider_not_configured in OpenAI shape, x-should-retry: false, naming OPENAI_API_KEY; streamed or not; upstream untouched', async () => {
    const { up, store, post } = await gateway('ok', { FLOTILLA_MODEL_PROVIDERS: 'claude-*=anthropic,gpt-*=openai' });
    for (const [path, body] of [
      ['/v1/chat/completions', chat()],
      ['/v1/chat/completions', chat({ stream: true })],
      ['/v1/responses', resp()],
      ['/v1/responses', resp({ stream: true })],
    ] as const) {
      const res = await post(path, body, BEARER);
      expect(res.status, path).toBe(400);
      expect(res.headers.get('x-should-retry'), path).toBe('false');
      const err = (await res.json()) as { error: { type: string; code: string; param: string; message: string } };
      expect(err.error).toMatchObject({ type: 'invalid_request_error', code: 'provider_not_configured', param: 'model' });
      expect(err.error.message).toMatch(/model "gpt-5" maps to provider openai, which is not configured on this server: set OPENAI_API_KEY/);
    }
    expect(up.seen).toHaveLength(0);
    expect(store.calls.map((c) => [c.httpStatus, c.refused])).toEqual(Array.from({ length: 4 }, () => [400, 'provider_not_configured']));
  });

  it('openai while FLOTILLA_OPENAI_COMPATIBLE_URL is set too: served by OpenAI with its key (both upstreams side by side); openai-compatible without its URL names that setting', async () => {
    const both = await gateway('ok', { OPENAI_API_KEY: OAI.join(','), FLOTILLA_OPENAI_COMPATIBLE_URL: 'http://127.0.0.1:9/v1', FLOTILLA_MODEL_PROVIDERS: 'gpt-*=openai' });
    const a = await both.post('/v1/chat/completions', chat(), BEARER);
    expect(a.status, await a.clone().text()).toBe(200);
    expect(both.up.seen.map((r) => [r.path, r.authorization])).toEqual([['/v1/chat/completions', `Bearer ${OAI[0]}`]]);
    const openai = await gateway('ok', { OPENAI_API_KEY: OAI.join(','), FLOTILLA_MODEL_PROVIDERS: 'gpt-*=openai-compatible' });
    const b = (await (await openai.post('/v1/chat/completions', chat(), BEARER)).json()) as { error: { message: string } };
    expect(b.error.message).toMatch(/^model "gpt-5" maps to provider openai-compatible, which is not configured on this server: set FLOTILLA_OPENAI_COMPATIBLE_URL /);
    expect(openai.up.seen).toEqual([]);
  });
});
