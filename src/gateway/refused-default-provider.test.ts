/**
 * A call refused before its model could be read — a body that is not JSON, one naming no model,
 * one over the size limit — is recorded against the server's default provider (the `*` route's,
 * here `scripted`), as a name no specific route matches is; before, against the wire format's
 * own upstream (anthropic for Messages, the OpenAI-format upstream for the others), which the
 * README does not say (fresh tester). Without a `*` route: the format's own, as before.
 * Gateway over node:http, memory store; the upstream must see nothing.
 */
import { describe, expect, it } from 'vitest';
import { startGateway } from './test-server.js';

const TOKEN = 'flj_refused_default_0123456789abcd';
const PATHS = ['/v1/messages', '/v1/chat/completions', '/v1/responses'];

describe('refused before the model is known: the ledger row names the default route\'s provider', () => {
  it('with a `*` route: scripted for every path and refusal', async () => {
    const gw = await startGateway({
      job: { token: TOKEN, id: 41, budgetMicros: 5_000_000 },
      openai: 'openai-compatible',
      config: { maxRequestBytes: 1000, modelProviders: [{ pattern: 'claude-*', provider: 'anthropic' }, { pattern: 'gpt-*', provider: 'openai-compatible' }, { pattern: '*', provider: 'scripted' }] },
    });
    try {
      for (const path of PATHS) {
        for (const body of ['{not json', JSON.stringify({ max_tokens: 10, messages: [] }), JSON.stringify({ model: 'gpt-4o', pad: 'x'.repeat(2000) })]) {
          const res = await gw.post(path, body);
          expect([400, 413], `${path} ${body.slice(0, 20)}`).toContain(res.status);
        }
      }
      await expect.poll(() => gw.store.calls.length).toBe(9);
      expect(gw.store.calls.map((c) => [c.provider, c.model])).toEqual(Array.from({ length: 9 }, () => ['scripted', 'unknown']));
      expect(gw.up.seen).toHaveLength(0);
    } finally {
      await gw.close();
    }
  });

  it('without one: the wire format\'s own provider', async () => {
    const gw = await startGateway({ job: { token: TOKEN, id: 42, budgetMicros: 5_000_000 }, openai: 'openai-compatible' });
    try {
      for (const path of PATHS) expect((await gw.post(path, '{not json')).status).toBe(400);
      await expect.poll(() => gw.store.calls.length).toBe(3);
      expect(gw.store.calls.map((c) => c.provider)).toEqual(['anthropic', 'openai-compatible', 'openai-compatible']);
    } finally {
      await gw.close();
    }
  });
});
