/**
 * Both OpenAI-format upstreams at once (config.ts loadOpenAiUpstreams): OpenAI itself
 * (OPENAI_API_KEY) and an openai-compatible server (FLOTILLA_OPENAI_COMPATIBLE_URL), so routes
 * send `gpt-*` to one and `qwen*` to the other. Each call reaches only its route's upstream, with
 * only that upstream's key; a model no route names goes to the compatible server (the default
 * when its URL is set). Before, the compatible URL took OpenAI's place: a `gpt-*` route to
 * `openai` was refused `provider_not_configured` although OPENAI_API_KEY was set (fresh-user
 * finding). Real HTTP, two fake upstreams.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { loadGatewayConfig } from './config.js';
import { fakeUpstream } from './test-upstream.js';
import { startGateway } from './test-server.js';

const reply = () => ({ body: JSON.stringify({ id: 'c', object: 'chat.completion', model: 'x', choices: [], usage: { prompt_tokens: 10, completion_tokens: 2 } }) });
const openai = await fakeUpstream(reply);
const compat = await fakeUpstream(reply);
const env = { OPENAI_API_KEY: 'sk-openai-key-1234', OPENAI_BASE_URL: `${openai.url}/v1`, FLOTILLA_OPENAI_COMPATIBLE_URL: `${compat.url}/v1`, FLOTILLA_OPENAI_COMPATIBLE_KEY: 'sk-compat-key-5678' };
const config = loadGatewayConfig(env);
const gw = await startGateway({
  job: { token: 'flj_twoupstreams_0123456789abcdefgh', id: 5, budgetMicros: 100_000_000 },
  config: { openai: config.openai, openaiSecond: config.openaiSecond, modelProviders: [{ pattern: 'gpt-*', provider: 'openai' }, { pattern: 'qwen*', provider: 'openai-compatible' }] },
});
afterAll(async () => {
  await gw.close();
  await openai.close();
  await compat.close();
});

const chat = (model: string) => ({ model, max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] });

describe('openai and openai-compatible upstreams side by side', () => {
  it('reads both from the environment: the compatible server first (the default), OpenAI second', () => {
    expect(config.openai).toEqual({ provider: 'openai-compatible', baseUrl: `${compat.url}/v1`, apiKeys: ['sk-compat-key-5678'] });
    expect(config.openaiSecond).toEqual({ provider: 'openai', baseUrl: `${openai.url}/v1`, apiKeys: ['sk-openai-key-1234'] });
  });

  it('each route reaches its own upstream with its own key, and no other', async () => {
    for (const [model, path] of [['gpt-4o', '/v1/chat/completions'], ['qwen3-coder', '/v1/chat/completions'], ['gpt-5', '/v1/responses']] as const) {
      const body = path.endsWith('responses') ? { model, max_output_tokens: 10, input: 'hi' } : chat(model);
      const res = await gw.post(path, body);
      expect(res.status, await res.clone().text()).toBe(200);
      await res.arrayBuffer();
    }
    expect(openai.seen.map((r) => [r.url, (JSON.parse(r.body) as { model: string }).model, r.headers.authorization])).toEqual([
      ['/v1/chat/completions', 'gpt-4o', 'Bearer sk-openai-key-1234'],
      ['/v1/responses', 'gpt-5', 'Bearer sk-openai-key-1234'],
    ]);
    expect(compat.seen.map((r) => [r.url, (JSON.parse(r.body) as { model: string }).model, r.headers.authorization])).toEqual([['/v1/chat/completions', 'qwen3-coder', 'Bearer sk-compat-key-5678']]);
  });
});
