/**
 * `PUT /api/gateway/prices` for a model whose shipped table entry has long-context rates while
 * flotilla.yaml prices it flat (`longContext: null`): an override that leaves `longContext`
 * out is refused (400, `price.longContext`) as it is without the file. The file can change and
 * the override would then keep the table's long-context rates under its own base rates
 * (fresh-tester finding: a call charged 1,271,250 µ$ at $6 / $22.50 under a $2 / $4 override,
 * after the file's line was removed). The real server, flotilla.yaml laid over the shipped table
 * by the gateway's own withGatewayFile. Also: a rate in float noise (0.30000000000000004) is
 * stored at 6 decimals; deleting a route the configuration sets names where it is set.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { withGatewayFile } from '../gateway/config-file.js';
import { loadPriceTable } from '../gateway/prices.js';
import { startTestServer, TEST_GATEWAY, type TestServer } from './test-helpers.js';

let t: TestServer;

beforeAll(async () => {
  const config = withGatewayFile(
    { ...TEST_GATEWAY, prices: loadPriceTable() },
    { file: '/etc/flotilla.yaml', routes: [{ pattern: 'claude-*', provider: 'scripted' }], prices: {
        'claude-sonnet-4-5': { input: 2.7, output: 13.5, cacheWrite5m: 3.375, cacheWrite1h: 5.4, cacheRead: 0.27, longContext: null },
        acme: { input: 1, output: 2, cacheWrite5m: 1.25, cacheWrite1h: 2, cacheRead: 0.1, longContext: { aboveInputTokens: 1000, input: 5, output: 6, cacheWrite5m: 6.25, cacheWrite1h: 10, cacheRead: 0.5 } },
      },
    },
  );
  expect(config.prices.models['claude-sonnet-4-5']?.longContext).toBeUndefined(); // flat while the file says so
  t = await startTestServer({ gateway: config });
});
afterAll(async () => {
  await t.close();
});

const putPrice = (model: string, price: object) => t.api('/api/gateway/prices', { method: 'PUT', json: { model, price } });

describe('an API price override of a model the file prices flat', () => {
  it('without longContext: refused, naming the table’s rates; with null or its own rates: taken', async () => {
    const refused = await putPrice('claude-sonnet-4-5-20250929', { input: 2, output: 4 });
    expect(refused.status).toBe(400);
    const { error } = (await refused.json()) as { error: { field: string; message: string } };
    expect(error.field).toBe('price.longContext');
    // ...saying the file prices them flat for now (it said "the price table prices" those calls, as if in effect: a fresh tester)
    const version = loadPriceTable().version;
    expect(error.message.startsWith(`price.longContext: the price table ${version} (/etc/flotilla.yaml prices them flat for now; without its entry, or once it changes, these apply) prices claude-sonnet-4-5-20250929 calls above 200000 input-side tokens at long-context rates (input 6, output 22.5,`), error.message).toBe(true);
    expect((await putPrice('claude-sonnet-4-5-20250929', { input: 2, output: 4, longContext: null })).status).toBe(200);
    // a model without long-context rates anywhere needs neither
    expect((await putPrice('claude-haiku-4-5', { input: 1, output: 5 })).status).toBe(200);
    // rates the file gives (acme's, which acme-mini would take): the refusal says they are the file's, not the table's (a fresh tester)
    const mini = await putPrice('acme-mini', { input: 0.5, output: 1 });
    expect([mini.status, ((await mini.json()) as { error: { message: string } }).error.message]).toEqual([
      400,
      expect.stringMatching(/^price\.longContext: \/etc\/flotilla\.yaml's price of acme prices acme-mini calls above 1000 input-side tokens at long-context rates \(input 5, output 6,/),
    ]);
  });

  it('a name under a shorter API override priced flat is not refused for the table\'s rates when flotilla.yaml exists (it was refused, blaming the file: a fresh tester)', async () => {
    // claude-sonnet-4-5-mini set flat through the API covers claude-sonnet-4-5-mini-latest whatever flotilla.yaml says
    expect((await putPrice('claude-sonnet-4-5-mini', { input: 1, output: 1, longContext: null })).status).toBe(200);
    const res = await putPrice('claude-sonnet-4-5-mini-latest', { input: 1.5, output: 1.5 });
    expect(res.status, await res.clone().text()).toBe(200);
    await t.api('/api/gateway/prices?model=claude-sonnet-4-5-mini-latest', { method: 'DELETE' });
    expect((await t.api('/api/gateway/prices?model=claude-sonnet-4-5-mini', { method: 'DELETE' })).status).toBe(204);
  });

  it('a rate within float noise of whole µ$ (0.1 + 0.2) is stored and shown at 6 decimals', async () => {
    const res = await putPrice('m1', { input: 0.1, output: 0.30000000000000004, longContext: { aboveInputTokens: 1000, input: 0.2, output: 0.1 + 0.2 + 0.3, cacheWrite5m: 0.25, cacheWrite1h: 0.4, cacheRead: 0.02 } });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { price: { output: number; longContext: { output: number } } };
    expect([body.price.output, body.price.longContext.output]).toEqual([0.3, 0.6]);
    const listed = (await (await t.api('/api/gateway/routes')).json()) as { prices: Array<{ model: string; price: { output: number } }> };
    expect(listed.prices.find((p) => p.model === 'm1')?.price.output).toBe(0.3);
  });

  it('deleting a route the configuration sets: 404 saying where it is set', async () => {
    const res = await t.api(`/api/gateway/routes?pattern=${encodeURIComponent('claude-*')}`, { method: 'DELETE' });
    expect(res.status).toBe(404);
    expect(((await res.json()) as { error: { message: string } }).error.message).toBe(
      'no API model route for pattern "claude-*": this route is set in the server\'s configuration (flotilla.yaml gateway.models, or FLOTILLA_MODEL_PROVIDERS), which the API does not change; edit it and restart the server, or set an API route for the pattern, which comes first',
    );
  });
});
