/**
 * An API price override whose name extends another API override's (`zeta-mini` beside `zeta`,
 * neither in the price table): what it leaves out comes from the `zeta` override — the entry
 * calls of `zeta-mini` were priced at without it — not from the table's default entry (a fresh
 * tester's finding: the README says "from the entry it replaces"). Over real HTTP against a
 * real server and SQLite store: the PUT's defaults, its long-context refusal and the prices in
 * effect (`replaces` source `api`), each worked out by hand (the charges: price-override.test.ts).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadPriceTable } from '../gateway/prices.js';
import { startTestServer, TEST_GATEWAY, type TestServer } from './test-helpers.js';

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer();
});
afterAll(() => t.close());

const put = (model: string, price: object) => t.api('/api/gateway/prices', { method: 'PUT', json: { model, price } });
type InEffect = { model: string; price: Record<string, unknown>; source: string; replaces: { source: string; model: string | null }; kept: string[] };
const inEffect = async (model: string) => ((await (await t.api('/api/gateway/routes')).json()) as { pricesInEffect: InEffect[] }).pricesInEffect.find((p) => p.model === model);

describe('zeta-mini beside zeta, both set through the API', () => {
  it('takes its cache-rate ratios, web search and max output from zeta; must say longContext when zeta has long-context rates', async () => {
    // zeta: cache reads at input × 0.5 (not the default entry's × 0.1), long-context rates above 100,000
    const zeta = { input: 2, output: 8, cacheWrite5m: 2.5, cacheWrite1h: 4, cacheRead: 1, maxOutput: 5000, webSearch: 40, longContext: { aboveInputTokens: 100_000, input: 4, output: 16, cacheWrite5m: 5, cacheWrite1h: 8, cacheRead: 2 } };
    expect((await put('zeta', zeta)).status).toBe(200);
    // zeta-mini without longContext would take zeta's long-context rates under its own base rates: refused
    const refused = await put('zeta-mini', { input: 1, output: 4 });
    expect(refused.status).toBe(400);
    expect(((await refused.json()) as { error: { message: string } }).error.message).toMatch(/^price\.longContext: the API's price of zeta prices zeta-mini calls above 100000 input-side tokens at long-context rates \(input 4, output 16/);

    const res = await put('zeta-mini', { input: 1, output: 4, longContext: null });
    expect(res.status, await res.clone().text()).toBe(200);
    // cache rates by zeta's ratios: 1 × 2.5/2 = 1.25, 1 × 4/2 = 2, 1 × 1/2 = 0.5
    expect(((await res.json()) as { price: object }).price).toEqual({ input: 1, output: 4, cacheWrite5m: 1.25, cacheWrite1h: 2, cacheRead: 0.5, longContext: null });
    expect(await inEffect('zeta-mini')).toEqual({
      model: 'zeta-mini',
      price: { input: 1, output: 4, cacheWrite5m: 1.25, cacheWrite1h: 2, cacheRead: 0.5, maxOutput: 5000, webSearch: 40, longContext: null },
      source: 'api',
      updatedAt: expect.any(String),
      replaces: { source: 'api', model: 'zeta' },
      kept: ['webSearch', 'maxOutput'],
    });
    expect((await inEffect('zeta'))?.replaces).toEqual({ source: 'table', model: null });
  });
});

describe('a change that would move the long-context rates of an override that gives none of its own', () => {
  it('setting eta with long-context rates after eta-mini (none of its own) is refused naming eta-mini; once eta-mini says its own, allowed; deleting eta is refused when eta-mini would take the table\'s', async () => {
    // eta-mini first, nothing under it with long-context rates (eta is no table model): accepted without longContext
    expect((await put('eta-mini', { input: 1, output: 1 })).status).toBe(200);
    // eta with long-context rates: eta-mini would take them under its $1 base rates (a fresh
    // tester: 200 input + 10 output tokens charged 10,500 µ$ instead of 210)
    const lc = { aboveInputTokens: 100, input: 50, output: 50, cacheWrite5m: 62.5, cacheWrite1h: 100, cacheRead: 5 };
    const refused = await put('eta', { input: 10, output: 10, longContext: lc });
    expect(refused.status).toBe(400);
    expect(await refused.json()).toEqual({
      error: {
        code: 'invalid_request',
        field: 'price.longContext',
        message:
          "price.longContext: setting eta's price would change the long-context rates of the API's price of eta-mini (none; then above 100 input-side tokens: input 50, output 50, cache write 62.5 / 100, cache read 5 USD per million tokens), " +
          'which gives none of its own and takes them from the entry it extends: give it its own first (flotilla models price eta-mini ... --long-context-above N --long-context-input USD --long-context-output USD, or --no-long-context)',
      },
    });
    // nothing was stored: eta has no API price, eta-mini's rates are as they were
    expect(await inEffect('eta')).toBeUndefined();
    expect((await inEffect('eta-mini'))?.price.longContext).toBeUndefined();
    // eta without long-context rates moves nothing: allowed
    expect((await put('eta', { input: 10, output: 10, longContext: null })).status).toBe(200);
    // eta-mini pins its own (none), then eta may have long-context rates
    expect((await put('eta-mini', { input: 1, output: 1, longContext: null })).status).toBe(200);
    expect((await put('eta', { input: 10, output: 10, longContext: lc })).status).toBe(200);
    expect((await inEffect('eta-mini'))?.price.longContext).toBeNull();
    // eta set again with input and output only would drop its own long-context rates without a
    // word (a fresh tester, through the dashboard's form): refused, naming them
    const dropping = await put('eta', { input: 12, output: 12 });
    expect([dropping.status, ((await dropping.json()) as { error: { message: string } }).error.message]).toEqual([
      400,
      "price.longContext: eta's price now has long-context rates (above 100 input-side tokens: input 50, output 50, cache write 62.5 / 100, cache read 5 USD per million tokens) and this one gives none, which would make them none: give its long-context rates again, or longContext: null (--no-long-context) to drop them",
    ]);
    expect((await put('eta', { input: 12, output: 12, longContext: null })).status).toBe(200);

  });

  it('deleting a shorter override that would hand a longer one (none of its own) the table\'s long-context rates is refused 409 naming it', async () => {
    const real = await startTestServer({ gateway: { ...TEST_GATEWAY, prices: loadPriceTable() } });
    try {
      const putReal = (model: string, price: object) => real.api('/api/gateway/prices', { method: 'PUT', json: { model, price } });
      // claude-sonnet-4-5-mini (none of its own) sits on an API claude-sonnet-4-5 priced flat
      expect((await putReal('claude-sonnet-4-5', { input: 3, output: 15, longContext: null })).status).toBe(200);
      expect((await putReal('claude-sonnet-4-5-mini', { input: 1, output: 2 })).status).toBe(200);
      const del = await real.api('/api/gateway/prices?model=claude-sonnet-4-5', { method: 'DELETE' });
      expect(del.status).toBe(409);
      expect(((await del.json()) as { error: { code: string; message: string } }).error).toMatchObject({
        code: 'conflict',
        message: expect.stringMatching(/^deleting claude-sonnet-4-5's price would change the long-context rates of the API's price of claude-sonnet-4-5-mini \(none; then above 200000 input-side tokens: input 6, output 22\.5, /),
      });
      // once it says its own, the delete goes through
      expect((await putReal('claude-sonnet-4-5-mini', { input: 1, output: 2, longContext: null })).status).toBe(200);
      expect((await real.api('/api/gateway/prices?model=claude-sonnet-4-5', { method: 'DELETE' })).status).toBe(204);
    } finally {
      await real.close();
    }
  });
});
