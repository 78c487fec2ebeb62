/**
 * An API price override whose name extends another API override's (`zeta-mini` beside `zeta`,
 * neither in the price table): what it leaves out comes from the `zeta` override — the entry
 * calls of `zeta-mini` were priced at without it — not from the table's default entry (a fresh
 * tester's finding: the README says "from the entry it replaces"). Over real HTTP against a
 * real server and SQLite store: the PUT's defaults, its long-context refusal and the prices in
 * effect (`replaces` source `api`), each worked out by hand (the charges: price-override.test.ts).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './test-helpers.js';

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
