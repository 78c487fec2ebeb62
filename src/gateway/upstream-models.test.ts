/**
 * `GET /v1/models` (OpenAI format) adds the models an OpenAI-compatible upstream lists itself
 * (upstream-models.ts) that a call would be routed to it: a local server's names are in no price
 * table, and a route such as `gpt-*` cannot be listed (fresh-tester finding: a client
 * discovering models through the gateway saw none of the local server's). The list is asked at
 * most once a minute; an upstream that fails leaves the gateway's own listing, logged.
 * Real HTTP gateway (routes claude-* → anthropic, gpt-* → openai-compatible), a fake upstream.
 */
import { describe, expect, it } from 'vitest';
import { createLogger } from '../core/log.js';
import { startGateway } from './test-server.js';
import type { FakeReply } from './test-upstream.js';

const TOKEN = 'flj_upstream_models_0123456789abcd';
const LISTED = { object: 'list', data: [{ id: 'gpt-local-1', object: 'model' }, { id: 'qwen3:8b' }, { id: 'claude-x' }, { id: 'gpt-evil\u202e' }, { id: 42 }, { id: 'gpt-4o' }] };

async function listing(url: string): Promise<string[]> {
  const res = await fetch(url + '/v1/models', { headers: { authorization: `Bearer ${TOKEN}` } });
  expect(res.status).toBe(200);
  return ((await res.json()) as { data: Array<{ id: string; owned_by: string }> }).data.map((m) => `${m.id} ${m.owned_by}`);
}

describe('GET /v1/models with an OpenAI-compatible upstream', () => {
  it("adds the upstream's own models that route to it, once, in id order; asks it once for two listings", async () => {
    let asked = 0;
    const gw = await startGateway({
      upstream: (r): FakeReply => {
        if (r.url === '/v1/models') asked++;
        return { body: JSON.stringify(LISTED) };
      },
      job: { token: TOKEN, id: 3, budgetMicros: 1_000_000 },
      openai: 'openai-compatible',
    });
    try {
      const ids = await listing(gw.url);
      // gpt-local-1: the upstream's own, routed by gpt-*; not qwen3:8b (no route), claude-x (anthropic), an invalid name, a non-string id
      expect(ids).toContain('gpt-local-1 openai-compatible');
      expect(ids.filter((m) => m.startsWith('gpt-4o '))).toEqual(['gpt-4o openai-compatible']); // listed by the price table and the upstream: once
      expect(ids.some((m) => /^(qwen3:8b|claude-x|gpt-evil)/.test(m))).toBe(false);
      expect(ids).toEqual([...ids].sort());
      await listing(gw.url);
      expect(asked).toBe(1);
      // one model by id, through its route
      const one = await fetch(gw.url + '/v1/models/gpt-local-1', { headers: { authorization: `Bearer ${TOKEN}` } });
      expect([one.status, ((await one.json()) as { owned_by: string }).owned_by]).toEqual([200, 'openai-compatible']);
    } finally {
      await gw.close();
    }
  });

  it("an upstream that answers 500: the gateway's own listing, and a warning without the reply's text", async () => {
    const lines: string[] = [];
    const gw = await startGateway({
      upstream: (r): FakeReply => (r.url === '/v1/models' ? { status: 500, body: 'boom sk-secret' } : { body: '{}' }),
      job: { token: TOKEN, id: 3, budgetMicros: 1_000_000 },
      openai: 'openai-compatible',
      log: createLogger('warn', (l) => void lines.push(l)),
    });
    try {
      const ids = await listing(gw.url);
      expect(ids).toContain('gpt-4o openai-compatible');
      expect(ids.some((m) => m.startsWith('gpt-local-1'))).toBe(false);
      const warning = lines.find((l) => l.includes('model list'));
      expect(warning).toMatch(/could not read the model list of the OpenAI-compatible upstream.*HTTP 500/);
      expect(warning).not.toContain('boom');
    } finally {
      await gw.close();
    }
  });
});
