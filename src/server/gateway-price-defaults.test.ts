/**
 * `PUT /api/gateway/prices` defaults the cache rates a price leaves out (protocol
 * setModelPriceRequestFor): the input rate times the ratios of the price table entry the
 * override replaces — for a model the table does not list (its default entry's) and Claude
 * models, cache writes 5-minute = input × 1.25, 1-hour = input × 2, cache reads = input × 0.1;
 * for gpt-4o reads × 0.5 — rounded to 6 decimals; long-context rates alike. Over
 * real HTTP against a real server and SQLite store; every expected value worked out by hand.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadPriceTable } from '../gateway/prices.js';
import { startTestServer, TEST_GATEWAY, type TestServer } from './test-helpers.js';

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer();
});
afterAll(() => t.close());

type View = { prices: Array<{ model: string; price: Record<string, unknown> }> };
/** The stored price of `model` on server `s`, as GET /api/gateway/routes lists it. */
const listedOn = (s: () => TestServer) => async (model: string) => ((await (await s().api('/api/gateway/routes')).json()) as View).prices.find((p) => p.model === model)?.price;
/** PUT /api/gateway/prices on server `s`. */
const putOn = (s: () => TestServer) => (model: string, price: object) => s().api('/api/gateway/prices', { method: 'PUT', json: { model, price } });
const listed = listedOn(() => t);
const put = putOn(() => t);

describe('PUT /api/gateway/prices: cache rates default from the input rate', () => {
  it('all three left out: input 3 → cache writes 3.75 (5 min) and 6 (1 h), cache reads 0.3', async () => {
    const res = await put('my-model', { input: 3, output: 15 });
    expect(res.status, await res.clone().text()).toBe(200);
    // 3 × 1.25 = 3.75; 3 × 2 = 6; 3 × 0.1 = 0.3 (0.30000000000000004 in floats, stored rounded).
    const want = { input: 3, output: 15, cacheWrite5m: 3.75, cacheWrite1h: 6, cacheRead: 0.3 };
    expect(((await res.json()) as { price: object }).price).toEqual(want);
    expect(await listed('my-model')).toEqual(want);
  });

  it('one given, the others defaulted: input 0.7 with cacheWrite1h 1 → 0.875 and 0.07', async () => {
    const res = await put('other-model', { input: 0.7, output: 2, cacheWrite1h: 1 });
    expect(res.status, await res.clone().text()).toBe(200);
    // 0.7 × 1.25 = 0.875; 0.7 × 0.1 = 0.07 (0.06999999999999999 in floats).
    expect(await listed('other-model')).toEqual({ input: 0.7, output: 2, cacheWrite5m: 0.875, cacheWrite1h: 1, cacheRead: 0.07 });
  });

  it('long-context rates default the same way: long input 6 → 7.5, 12 and 0.6', async () => {
    const res = await put('claude-sonnet-4-5', { input: 3, output: 15, longContext: { aboveInputTokens: 200_000, input: 6, output: 22.5 } });
    expect(res.status, await res.clone().text()).toBe(200);
    // 6 × 1.25 = 7.5; 6 × 2 = 12; 6 × 0.1 = 0.6 (0.6000000000000001 in floats).
    expect(await listed('claude-sonnet-4-5')).toEqual({
      input: 3,
      output: 15,
      cacheWrite5m: 3.75,
      cacheWrite1h: 6,
      cacheRead: 0.3,
      longContext: { aboveInputTokens: 200_000, input: 6, output: 22.5, cacheWrite5m: 7.5, cacheWrite1h: 12, cacheRead: 0.6 },
    });
  });

  it('a default past the 1,000,000 cap is a 400 naming the field; input and output stay required', async () => {
    // 600,000 × 1.25 = 750,000 fits; 600,000 × 2 = 1,200,000 for 1-hour writes does not.
    const big = await put('big-model', { input: 600_000, output: 1 });
    expect(big.status).toBe(400);
    expect(((await big.json()) as { error: { field: string } }).error.field).toBe('price.cacheWrite1h');
    const noInput = await put('big-model', { output: 1 });
    expect(noInput.status).toBe(400);
    expect(((await noInput.json()) as { error: { field: string } }).error.field).toBe('price.input');
    expect(await listed('big-model')).toBeUndefined();
  });

  it('a rate finer than 6 decimals (0.0000001: pricing would charge it as 0) is a 400 naming the field, as flotilla.yaml refuses it; so is a model name with a space', async () => {
    const fine = await put('fine-model', { input: 0.0000001, output: 2 });
    expect(fine.status).toBe(400);
    expect(((await fine.json()) as { error: { field: string; message: string } }).error).toMatchObject({ field: 'price.input', message: expect.stringContaining('price.input: must have at most 6 decimals') });
    const long = await put('fine-model', { input: 1, output: 2, longContext: { aboveInputTokens: 1000, input: 2, output: 4.0000001 } });
    expect(((await long.json()) as { error: { field: string } }).error.field).toBe('price.longContext.output');
    const spaced = await put('my model', { input: 1, output: 2 });
    expect(spaced.status).toBe(400);
    expect(((await spaced.json()) as { error: { field: string } }).error.field).toBe('model');
    expect(await listed('fine-model')).toBeUndefined();
    // 6 decimals are taken
    const six = await put('fine-model', { input: 0.000001, output: 2.123456 });
    expect(six.status, await six.clone().text()).toBe(200);
  });

  it('the OpenAPI schema of the body says the cache rates are optional and what they default to', async () => {
    const doc = (await (await t.api('/openapi.json', { token: null })).json()) as { components: { schemas: Record<string, { properties: Record<string, { required?: string[]; properties?: Record<string, { description?: string }> }> }> } };
    const price = doc.components.schemas.SetModelPriceRequest!.properties.price!;
    expect(price.required).toEqual(['input', 'output']);
    expect(price.properties!.cacheWrite5m!.description).toContain("the replaced price table entry's ratio; × 1.25");
    expect(price.properties!.cacheWrite1h!.description).toContain('× 2 for a model the table does not list');
    expect(price.properties!.cacheRead!.description).toContain('× 0.1 for a model the table does not list');
  });
});

describe('PUT /api/gateway/prices: a model the table lists keeps its cache ratios (fresh tester: a gpt-4o override read cached input at a tenth of its rate, 5× too cheap)', () => {
  // a server over the shipped price table (data/prices.json)
  let shipped: TestServer;
  beforeAll(async () => {
    shipped = await startTestServer({ gateway: { ...TEST_GATEWAY, prices: loadPriceTable() } });
  });
  afterAll(() => shipped.close());
  const listed = listedOn(() => shipped);
  const put = putOn(() => shipped);

  it('gpt-4o (table: input 2.5, cache writes 2.5 / 2.5, reads 1.25) at input 5 → cache writes 5 and 5, reads 2.5', async () => {
    const res = await put('gpt-4o', { input: 5, output: 20 });
    expect(res.status, await res.clone().text()).toBe(200);
    // ratios 2.5 / 2.5 = 1, 2.5 / 2.5 = 1, 1.25 / 2.5 = 0.5
    expect(await listed('gpt-4o')).toEqual({ input: 5, output: 20, cacheWrite5m: 5, cacheWrite1h: 5, cacheRead: 2.5 });
  });

  it('gpt-4.1 (reads 0.5 of input 2) and gpt-5 (reads 0.125 of input 1.25) keep theirs: × 0.25 and × 0.1', async () => {
    expect((await put('gpt-4.1', { input: 4, output: 16 })).status).toBe(200);
    expect(await listed('gpt-4.1')).toEqual({ input: 4, output: 16, cacheWrite5m: 4, cacheWrite1h: 4, cacheRead: 1 });
    expect((await put('gpt-5', { input: 2, output: 16 })).status).toBe(200);
    expect(await listed('gpt-5')).toEqual({ input: 2, output: 16, cacheWrite5m: 2, cacheWrite1h: 2, cacheRead: 0.2 });
  });

  it('a snapshot name takes its model\'s entry: gpt-4o-2024-11-20 at input 10 reads at 5', async () => {
    expect((await put('gpt-4o-2024-11-20', { input: 10, output: 40, cacheWrite5m: 10 })).status).toBe(200);
    expect(await listed('gpt-4o-2024-11-20')).toEqual({ input: 10, output: 40, cacheWrite5m: 10, cacheWrite1h: 10, cacheRead: 5 });
  });
});

describe('DELETE /api/gateway/prices of a model flotilla.yaml prices', () => {
  it('404 naming the file, not a bare "no price override" (second fresh tester); a model priced nowhere: the plain 404', async () => {
    const file = '/srv/flotilla.yaml';
    const table = TEST_GATEWAY.prices;
    const s = await startTestServer({ gateway: { ...TEST_GATEWAY, priceFile: { file, prices: { 'gpt-4o': { input: 5, output: 20, cacheWrite5m: 5, cacheWrite1h: 5, cacheRead: 2.5 } }, table } } });
    try {
      const res = await s.api('/api/gateway/prices?model=gpt-4o', { method: 'DELETE' });
      expect([res.status, await res.json()]).toEqual([404, { error: { code: 'not_found', field: 'model', message: `no price override set through the API for model "gpt-4o": its price is set in ${file} (gateway.prices), which the API does not change; edit the file and restart the server` } }]);
      const other = await s.api('/api/gateway/prices?model=nowhere', { method: 'DELETE' });
      expect([other.status, await other.json()]).toEqual([404, { error: { code: 'not_found', field: 'model', message: 'no price override set through the API for model "nowhere"' } }]);
    } finally {
      await s.close();
    }
  });
});
