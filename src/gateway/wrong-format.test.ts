/**
 * A model routed to a provider of the other wire format gets a 400 that says which endpoints
 * that provider takes, how to route the model to one of the format called (a harness cannot
 * switch endpoints), and, when that provider has no key or URL here, its setting too (fresh-tester
 * finding: a Claude model routed to an OpenAI provider without a key was told only to call
 * /v1/chat/completions, which would have failed as well). Recorded `wrong_format`, $0; the
 * upstream sees nothing. Gateway over node:http, memory store.
 */
import { describe, expect, it } from 'vitest';
import { startGateway } from './test-server.js';

const TOKEN = 'flj_wrongformat_0123456789abcdefgh';

describe('a model routed to a provider of the other wire format', () => {
  it('Messages → an OpenAI provider (configured or not); Chat → anthropic', async () => {
    // openai-compatible is configured (the fake upstream's URL); openai has no key
    const gw = await startGateway({
      openai: 'openai-compatible',
      config: { modelProviders: [{ pattern: 'claude-sonnet-4-5', provider: 'openai' }, { pattern: 'claude-haiku-4-5', provider: 'openai-compatible' }, { pattern: 'gpt-4o', provider: 'anthropic' }] },
      job: { token: TOKEN, id: 4, budgetMicros: 5_000_000 },
    });
    try {
      const msg = async (path: string, body: object) => {
        const res = await gw.post(path, body);
        return [res.status, ((await res.json()) as { error: { message: string } }).error.message];
      };
      const messages = (model: string) => ({ model, max_tokens: 10, messages: [{ role: 'user', content: 'x' }] });
      expect(await msg('/v1/messages', messages('claude-sonnet-4-5'))).toEqual([
        400,
        'model "claude-sonnet-4-5" is served by provider openai, which speaks the OpenAI formats: call /v1/chat/completions or /v1/responses, or route the model to a provider of this format (flotilla models set claude-sonnet-4-5 anthropic); provider openai is not configured on this server either: set OPENAI_API_KEY (several keys: comma-separated; OPENAI_BASE_URL for another endpoint)',
      ]);
      expect(await msg('/v1/messages', messages('claude-haiku-4-5'))).toEqual([
        400,
        'model "claude-haiku-4-5" is served by provider openai-compatible, which speaks the OpenAI formats: call /v1/chat/completions or /v1/responses, or route the model to a provider of this format (flotilla models set claude-haiku-4-5 anthropic)',
      ]);
      expect(await msg('/v1/chat/completions', { model: 'gpt-4o', messages: [{ role: 'user', content: 'x' }] })).toEqual([
        400,
        'model "gpt-4o" is served by provider anthropic, which speaks the Messages format: call /v1/messages, or route the model to a provider of this format (flotilla models set gpt-4o openai)',
      ]);
      expect(gw.up.seen).toHaveLength(0);
      expect(gw.store.calls.map((c) => [c.httpStatus, c.refused, c.costMicros])).toEqual([
        [400, 'wrong_format', 0],
        [400, 'wrong_format', 0],
        [400, 'wrong_format', 0],
      ]);
    } finally {
      await gw.close();
    }
  });
});
