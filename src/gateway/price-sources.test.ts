import { describe, expect, it } from 'vitest';
import { withGatewayFile } from './config-file.js';
import type { GatewayConfig } from './config.js';
import { MemoryGatewayStore } from './memory-store.js';
import { ModelDirectory } from './model-directory.js';
import { pricesInEffect } from './price-sources.js';
import { loadPriceTable, priceFor } from './prices.js';

// The prices in effect other than the table's, and where each came from (price-sources.ts),
// against a hand-worked expectation and against what the gateway's ModelDirectory prices with.

const table = loadPriceTable();
const base: GatewayConfig = { provider: 'scripted', anthropicBaseUrl: 'https://api.anthropic.com', prices: table };
const rates = (input: number, output: number) => ({ input, output, cacheWrite5m: input, cacheWrite1h: input, cacheRead: input / 10 });

describe('pricesInEffect', () => {
  it('no flotilla.yaml prices and no API overrides: none', () => {
    expect(pricesInEffect(base, [])).toEqual([]);
  });

  it("flotilla.yaml's and the API's, the API's winning a name both price; each names the entry it replaced and what it kept; equal to what the gateway charges", async () => {
    const config = withGatewayFile(base, {
      routes: [],
      file: '/etc/flotilla.yaml',
      prices: {
        qwen3: rates(0.4, 1.2), // not qwen3-coder's price: `coder` may name a dearer model (prices.ts SAME_OR_CHEAPER_WORDS)
        'claude-haiku-4-5': { ...rates(0.8, 4), maxOutput: 32000 },
        'claude-sonnet-4-5': { ...rates(2, 10), longContext: null },
      },
    });
    const store = new MemoryGatewayStore();
    store.prices.set('claude-haiku-4-5', rates(0.5, 2)); // over flotilla.yaml's
    store.prices.set('qwen3-coder', { ...rates(0.3, 0.9), webSearch: 5 }); // a name no price covered: over the table's default
    store.prices.set('gpt-5', rates(1, 8)); // over the table's
    const rows = pricesInEffect(config, await store.listModelPrices());
    // by hand from data/prices.json: claude-haiku-4-5 and claude-sonnet-4-5 have webSearch 10,
    // maxOutput 64000; gpt-5 has webSearch 10 and maxOutput 128000; the default entry webSearch 25
    expect(rows).toEqual([
      { model: 'qwen3', price: { ...rates(0.4, 1.2), webSearch: 25 }, source: 'flotilla.yaml', updatedAt: null, replaces: { source: 'table', model: null }, kept: ['webSearch'] },
      // flotilla.yaml's maxOutput 32000 is kept by the API's override that replaced it
      { model: 'claude-haiku-4-5', price: { ...rates(0.5, 2), webSearch: 10, maxOutput: 32000 }, source: 'api', updatedAt: '1970-01-01T00:00:00.000Z', replaces: { source: 'flotilla.yaml', model: 'claude-haiku-4-5' }, kept: ['webSearch', 'maxOutput'] },
      { model: 'claude-sonnet-4-5', price: { ...rates(2, 10), webSearch: 10, maxOutput: 64000, longContext: null }, source: 'flotilla.yaml', updatedAt: null, replaces: { source: 'table', model: 'claude-sonnet-4-5' }, kept: ['webSearch', 'maxOutput'] },
      { model: 'gpt-5', price: { ...rates(1, 8), webSearch: 10, maxOutput: 128000 }, source: 'api', updatedAt: '1970-01-01T00:00:00.000Z', replaces: { source: 'table', model: 'gpt-5' }, kept: ['webSearch', 'maxOutput'] },
      { model: 'qwen3-coder', price: { ...rates(0.3, 0.9), webSearch: 5 }, source: 'api', updatedAt: '1970-01-01T00:00:00.000Z', replaces: { source: 'table', model: null }, kept: [] },
    ]);
    // the gateway prices each of those names with exactly that (longContext null = none)
    const charged = await new ModelDirectory(store, config.modelProviders, config.prices).prices();
    for (const r of rows) {
      const { longContext, ...rest } = r.price;
      expect(priceFor(charged, r.model), r.model).toEqual(longContext === null ? rest : r.price);
    }
  });

  it('a config without a flotilla.yaml price lists the API overrides alone, over the table', () => {
    const rows = pricesInEffect(base, [{ model: 'claude-sonnet-4-5-20250929', price: { ...rates(3, 15), longContext: null }, updatedAt: 1_000 }]);
    expect(rows).toEqual([
      { model: 'claude-sonnet-4-5-20250929', price: { ...rates(3, 15), webSearch: 10, maxOutput: 64000, longContext: null }, source: 'api', updatedAt: '1970-01-01T00:00:01.000Z', replaces: { source: 'table', model: 'claude-sonnet-4-5' }, kept: ['webSearch', 'maxOutput'] },
    ]);
  });
});
