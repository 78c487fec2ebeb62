/**
 * A model name is the client's text: `toString`, `constructor`, `__proto__`, `hasOwnProperty`,
 * `valueOf` are names like any other. They were read from Object.prototype as price entries (a
 * function as the price: the call failed with a 500 in Anthropic's shape on every route, no
 * ledger row; a fresh user's finding). An unlisted name is priced at the table's `default`
 * entry: input $15, output $75 per million tokens (data/prices.json), so 10 input and 20
 * output tokens cost 10 × 15 + 20 × 75 = 1,650 µ$. An override named `__proto__` is an entry
 * of that name only: other unlisted models keep the default price.
 */
import { describe, expect, it } from 'vitest';
import { withOverrides } from './model-directory.js';
import { loadPriceTable, priceFor, tokenPriceFor } from './prices.js';
import { forFile, startGateway } from './test-server.js';

const NAMES = ['toString', 'constructor', '__proto__', 'hasOwnProperty', 'valueOf', 'isPrototypeOf', '__defineGetter__'];
const DEFAULT_COST = 10 * 15 + 20 * 75;

// every model to anthropic (Messages) on one gateway, to openai-compatible (Chat, Responses) on the other
const anthropic = forFile(() =>
  startGateway({
    job: { token: 'flj_prototype_names_0123456789ab', id: 31, budgetMicros: 1_000_000_000 },
    upstream: () => ({ body: JSON.stringify({ id: 'm', type: 'message', role: 'assistant', model: 'x', content: [{ type: 'text', text: 'ok' }], usage: { input_tokens: 10, output_tokens: 20 } }) }),
  }),
);
const openai = forFile(() =>
  startGateway({
    job: { token: 'flj_prototype_names_openai_0123456', id: 32, budgetMicros: 1_000_000_000 },
    openai: 'openai-compatible',
    config: { modelProviders: [{ pattern: '*', provider: 'openai-compatible' }] },
    upstream: (req) =>
      req.url.endsWith('/responses')
        ? { body: JSON.stringify({ id: 'r', object: 'response', model: 'x', output: [], usage: { input_tokens: 10, output_tokens: 20 } }) }
        : { body: JSON.stringify({ id: 'c', object: 'chat.completion', model: 'x', choices: [{ index: 0, message: { role: 'assistant', content: 'ok' } }], usage: { prompt_tokens: 10, completion_tokens: 20 } }) },
  }),
);

describe('model names that are Object.prototype members', () => {
  it.each(NAMES)('%s on /v1/messages: served, one ledger row at the default price', async (model) => {
    anthropic.reset();
    const res = await anthropic.post('/v1/messages', { model, max_tokens: 100, messages: [{ role: 'user', content: 'hi' }] });
    expect(res.status).toBe(200);
    await res.text();
    expect(anthropic.store.calls.map((c) => ({ model: c.model, cost: c.costMicros, usageKnown: c.usageKnown }))).toEqual([{ model, cost: DEFAULT_COST, usageKnown: true }]);
  });

  it.each(NAMES.flatMap((m) => [['/v1/chat/completions', m] as const, ['/v1/responses', m] as const]))('%s with model %s: served, one ledger row at the default price', async (path, model) => {
    openai.reset();
    const body = path === '/v1/responses' ? { model, max_output_tokens: 100, input: 'hi' } : { model, max_tokens: 100, messages: [{ role: 'user', content: 'hi' }] };
    const res = await openai.post(path, body);
    expect(res.status).toBe(200);
    await res.text();
    expect(openai.store.calls.map((c) => ({ model: c.model, cost: c.costMicros, usageKnown: c.usageKnown }))).toEqual([{ model, cost: DEFAULT_COST, usageKnown: true }]);
  });
});

describe('price lookups and overrides by such names', () => {
  const table = loadPriceTable();

  it('an unlisted prototype-member name gets the default entry', () => {
    for (const name of NAMES) expect(tokenPriceFor(table, name), name).toBe(table.default);
  });

  it('an override named __proto__ or toString prices that name only, not every unlisted model', () => {
    const price = { input: 1, output: 2, cacheWrite5m: 1.25, cacheWrite1h: 2, cacheRead: 0.1 };
    const t = withOverrides(table, [
      { model: '__proto__', price, updatedAt: 0 },
      { model: 'toString', price, updatedAt: 0 },
    ]);
    expect(Object.getPrototypeOf(t.models)).toBe(Object.prototype);
    for (const name of ['__proto__', 'toString']) expect(priceFor(t, name), name).toMatchObject({ input: 1, output: 2 });
    expect(priceFor(t, 'some-unlisted-model')).toMatchObject({ input: 15, output: 75 });
  });
});

describe('the gateway answers its own errors in the route\'s wire format', () => {
  it('GET /v1/chat/completions: 405 in OpenAI\'s shape; GET /v1/messages: Anthropic\'s; both with Allow: POST (RFC 9110 §15.5.6)', async () => {
    const o = await fetch(`${openai.url}/v1/chat/completions`);
    expect(o.status).toBe(405);
    expect(o.headers.get('allow')).toBe('POST');
    expect(await o.json()).toEqual({ error: { message: 'GET /v1/chat/completions: this endpoint takes POST (a model call sends its request body with POST)', type: 'invalid_request_error', param: null, code: 'method_not_allowed' } });
    expect(o.headers.get('x-should-retry')).toBe('false');
    const a = await fetch(`${anthropic.url}/v1/messages`);
    expect(a.status).toBe(405);
    expect(a.headers.get('allow')).toBe('POST');
    expect(await a.json()).toEqual({ type: 'error', error: { type: 'invalid_request_error', message: 'GET /v1/messages: this endpoint takes POST (a model call sends its request body with POST)' } });
    // the other POST routes alike (HEAD: the status and header, no body); a path no route has is still a 404
    for (const [method, path] of [['HEAD', '/v1/messages'], ['PUT', '/v1/messages/count_tokens'], ['DELETE', '/v1/responses']] as const) {
      const r = await fetch(`${openai.url}${path}`, { method });
      expect([method, path, r.status, r.headers.get('allow')]).toEqual([method, path, 405, 'POST']);
    }
    expect((await fetch(`${openai.url}/v1/nothing-here`)).status).toBe(404);
  });
});
