/**
 * How a price override combines with the table entry it replaces (price-override.ts), in
 * flotilla.yaml (config-file.ts withGatewayFile) and for the API's stored overrides
 * (model-directory.ts withOverrides), against the shipped table: claude-sonnet-4-5 3 / 15 /
 * 3.75 / 6 / 0.30, maxOutput 64,000, long-context rates 6 / 22.50 / 7.50 / 12 / 0.60 above
 * 200,000 input-side tokens; claude-opus-4-6 maxOutput 128,000, no long-context rates; web
 * searches $10 per 1,000 for both (gpt-4o $25; the default entry, for any model not listed, $25).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { callCost } from '../core/pricing.js';
import { loadGatewayFile, withGatewayFile } from './config-file.js';
import type { GatewayConfig } from './config.js';
import { ratesFor } from './long-context.js';
import { withOverrides } from './model-directory.js';
import { pricesInEffect } from './price-sources.js';
import { priceFor, loadPriceTable } from './prices.js';

const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

const BASE = { input: 2, output: 8, cacheWrite5m: 2.5, cacheWrite1h: 4, cacheRead: 0.2 };
const base = '{ input: 2, output: 8, cacheWrite5m: 2.5, cacheWrite1h: 4, cacheRead: 0.2 }';
const config = (): GatewayConfig => ({ provider: 'scripted', anthropicBaseUrl: 'http://unused', prices: loadPriceTable() });

/** A flotilla.yaml with `prices` (YAML lines under `gateway.prices`), read and laid over the shipped table. */
function withFile(prices: string): { file: string; merged: () => GatewayConfig } {
  const dir = mkdtempSync(join(tmpdir(), 'flotilla-price-override-'));
  dirs.push(dir);
  const file = join(dir, 'flotilla.yaml');
  writeFileSync(file, `gateway:\n  prices:\n${prices}`);
  return { file, merged: () => withGatewayFile(config(), loadGatewayFile(file)) };
}

/** µ$ of 250,000 input tokens and 10 output tokens of `model` under `table`'s prices. */
function longCall(prices: GatewayConfig['prices'], model: string): number {
  const u = { inputTokens: 250_000, outputTokens: 10, cacheReadTokens: 0, cacheWriteTokens: 0 };
  return callCost(u, ratesFor(priceFor(prices, model), 250_000)).micros;
}

describe('flotilla.yaml price overrides over the table', () => {
  it('one that leaves out the table\'s long-context rates is refused naming the file, its line and gateway.prices.<model>.longContext', () => {
    // the entry is on line 4 (gateway:, prices:, then claude-haiku-4-5 on line 3)
    const { file, merged } = withFile(`    claude-haiku-4-5: { input: 1, output: 5 }\n    claude-sonnet-4-5: ${base}\n`);
    expect(merged).toThrow(`${file}:4: gateway.prices.claude-sonnet-4-5.longContext: the price table prices claude-sonnet-4-5 calls above 200000 input-side tokens`);
    expect(merged).toThrow(/longContext: null/);
  });

  it('longContext: null prices flat; a missing maxOutput is the table\'s; its own long-context rates and maximum output are its own', () => {
    const own = '{ input: 2, output: 8, cacheWrite5m: 2.5, cacheWrite1h: 4, cacheRead: 0.2, maxOutput: 2000, longContext: { aboveInputTokens: 100000, input: 4, output: 16, cacheWrite5m: 5, cacheWrite1h: 8, cacheRead: 0.4 } }';
    const m = withFile(`    claude-sonnet-4-5: { input: 2, output: 8, cacheWrite5m: 2.5, cacheWrite1h: 4, cacheRead: 0.2, longContext: null }\n    claude-opus-4-6: ${base}\n    claude-sonnet-4: ${own}\n`).merged();
    // webSearch left out: the table's entry's ($10 per 1,000 for both)
    expect(m.prices.models['claude-sonnet-4-5']).toEqual({ ...BASE, webSearch: 10, maxOutput: 64_000 });
    expect(m.prices.models['claude-opus-4-6']).toEqual({ ...BASE, webSearch: 10, maxOutput: 128_000 });
    expect(m.prices.models['claude-sonnet-4']).toEqual({ ...BASE, webSearch: 10, maxOutput: 2000, longContext: { aboveInputTokens: 100_000, input: 4, output: 16, cacheWrite5m: 5, cacheWrite1h: 8, cacheRead: 0.4 } });
    // 250,000 × $2 + 10 × $8 per million, flat
    expect(longCall(m.prices, 'claude-sonnet-4-5')).toBe(500_080);
    // 250,000 × $4 + 10 × $16 per million
    expect(longCall(m.prices, 'claude-sonnet-4')).toBe(1_000_160);
  });
});

describe('the API\'s stored overrides over the table (withOverrides)', () => {
  it('no longContext key (stored before the API took it): the table\'s rates; null: flat; maxOutput: the table\'s unless given', () => {
    const table = loadPriceTable();
    const legacy = withOverrides(table, [{ model: 'claude-sonnet-4-5', price: BASE, updatedAt: 0 }]);
    expect(priceFor(legacy, 'claude-sonnet-4-5')).toMatchObject({ ...BASE, maxOutput: 64_000, longContext: { aboveInputTokens: 200_000, input: 6, output: 22.5 } });
    // 250,000 × $6 + 10 × $22.50 per million
    expect(longCall(legacy, 'claude-sonnet-4-5')).toBe(1_500_225);

    const flat = withOverrides(table, [{ model: 'claude-sonnet-4-5', price: { ...BASE, longContext: null, maxOutput: 1000 }, updatedAt: 0 }]);
    expect(priceFor(flat, 'claude-sonnet-4-5')).toEqual({ ...BASE, maxOutput: 1000, webSearch: 10 }); // webSearch: the table entry's
    expect(longCall(flat, 'claude-sonnet-4-5')).toBe(500_080);
    // a dated name falls back to the override, as to the entry it replaced
    expect(longCall(flat, 'claude-sonnet-4-5-20250929')).toBe(500_080);
  });
});

describe('an override of a name that extends another override\'s (zeta-mini beside zeta, neither in the table)', () => {
  const ZETA = { ...BASE, maxOutput: 5000, webSearch: 40, longContext: { aboveInputTokens: 100_000, input: 4, output: 16, cacheWrite5m: 5, cacheWrite1h: 8, cacheRead: 0.4 } };
  const MINI = { input: 0.5, output: 1, cacheWrite5m: 0.625, cacheWrite1h: 1, cacheRead: 0.05 };
  // what zeta-mini leaves out is zeta's, as a call of zeta-mini without its own override is priced at zeta
  const expected = { ...MINI, maxOutput: 5000, webSearch: 40, longContext: ZETA.longContext };

  it('the API\'s: takes maxOutput, webSearch and long-context rates from the zeta override, in either order', () => {
    const table = loadPriceTable();
    for (const order of [['zeta', 'zeta-mini'], ['zeta-mini', 'zeta']]) {
      const rows = order.map((model) => ({ model, price: model === 'zeta' ? ZETA : MINI, updatedAt: 0 }));
      const t = withOverrides(table, rows);
      expect(priceFor(t, 'zeta-mini')).toEqual(expected);
      expect(priceFor(t, 'zeta')).toEqual(ZETA);
      // 2 searches × $40 / 1,000 = 80,000 µ$ (the default entry's $25 gave 50,000)
      expect(twoSearches(t, 'zeta-mini')).toBe(80_000);
      // above 100,000 input-side tokens: 250,000 × $4 + 10 × $16 per million = 1,000,160 µ$
      expect(longCall(t, 'zeta-mini')).toBe(1_000_160);
    }
  });

  it('flotilla.yaml: the same, and zeta-mini needs no longContext of its own under a flat zeta', () => {
    const lc = '{ aboveInputTokens: 100000, input: 4, output: 16, cacheWrite5m: 5, cacheWrite1h: 8, cacheRead: 0.4 }';
    const mini = '{ input: 0.5, output: 1, cacheWrite5m: 0.625, cacheWrite1h: 1, cacheRead: 0.05 }';
    const m = withFile(`    zeta-mini: ${mini}\n    zeta: { input: 2, output: 8, cacheWrite5m: 2.5, cacheWrite1h: 4, cacheRead: 0.2, maxOutput: 5000, webSearch: 40, longContext: ${lc} }\n`);
    // zeta has long-context rates: zeta-mini, which would take them, must say its own or null
    expect(() => m.merged()).toThrow(/gateway\.prices\.zeta-mini\.longContext: gateway\.prices\.zeta prices zeta-mini calls above 100000/);
    const flat = withFile(`    zeta-mini: ${mini}\n    zeta: { input: 2, output: 8, cacheWrite5m: 2.5, cacheWrite1h: 4, cacheRead: 0.2, maxOutput: 5000, webSearch: 40, longContext: null }\n`).merged();
    expect(priceFor(flat.prices, 'zeta-mini')).toEqual({ ...MINI, maxOutput: 5000, webSearch: 40 });
    // the prices in effect say where what it kept came from
    const row = pricesInEffect(flat, []).find((p) => p.model === 'zeta-mini');
    expect([row?.replaces, row?.kept]).toEqual([{ source: 'flotilla.yaml', model: 'zeta' }, ['webSearch', 'maxOutput']]);
  });
});

/** µ$ of 2 server-side web searches (and no tokens) of `model` under `table`'s prices. */
function twoSearches(prices: GatewayConfig['prices'], model: string): number {
  const u = { inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0, webSearchRequests: 2 };
  return callCost(u, ratesFor(priceFor(prices, model), 0)).micros;
}

describe('an override without webSearch keeps the table\'s web-search price for its model', () => {
  it('flotilla.yaml: claude-sonnet-4-5 stays $10 per 1,000 (not the default\'s $25); a model not listed takes the default\'s; a given one is its own', () => {
    const m = withFile(`    claude-sonnet-4-5: { input: 2, output: 8, cacheWrite5m: 2.5, cacheWrite1h: 4, cacheRead: 0.2, longContext: null }\n    qwen3-coder: ${base}\n    claude-opus-4-6: { input: 2, output: 8, cacheWrite5m: 2.5, cacheWrite1h: 4, cacheRead: 0.2, webSearch: 40 }\n`).merged();
    expect(priceFor(m.prices, 'claude-sonnet-4-5').webSearch).toBe(10);
    expect(priceFor(m.prices, 'qwen3-coder').webSearch).toBe(25);
    expect(priceFor(m.prices, 'claude-opus-4-6').webSearch).toBe(40);
    // 2 searches × $10 / 1,000 = $0.02 = 20,000 µ$ (not 2 × $25 / 1,000 = 50,000 µ$)
    expect(twoSearches(m.prices, 'claude-sonnet-4-5')).toBe(20_000);
    // 2 × $40 / 1,000 = 80,000 µ$
    expect(twoSearches(m.prices, 'claude-opus-4-6')).toBe(80_000);
  });

  it('the API (withOverrides; also what flotilla models price stores): the entry the override replaces, by the same name matching; dated names too', () => {
    const table = loadPriceTable();
    const o = withOverrides(table, [
      { model: 'claude-haiku-4-5', price: BASE, updatedAt: 0 },
      { model: 'claude-opus-4-1-20250805', price: BASE, updatedAt: 0 },
      { model: 'gpt-4o', price: BASE, updatedAt: 0 },
      { model: 'my-local-model', price: BASE, updatedAt: 0 },
    ]);
    expect(priceFor(o, 'claude-haiku-4-5')).toEqual({ ...BASE, webSearch: 10, maxOutput: 64_000 });
    // a dated name replaces the entry of its undated one (claude-opus-4-1: $10)
    expect(priceFor(o, 'claude-opus-4-1-20250805').webSearch).toBe(10);
    expect(priceFor(o, 'gpt-4o').webSearch).toBe(25);
    expect(priceFor(o, 'my-local-model').webSearch).toBe(25);
    expect(twoSearches(o, 'claude-haiku-4-5')).toBe(20_000);
    expect(twoSearches(o, 'gpt-4o')).toBe(50_000);
  });

  it('a table entry without webSearch: the override takes the table\'s default entry\'s', () => {
    const own = { input: 1, output: 2, cacheWrite5m: 1, cacheWrite1h: 1, cacheRead: 0.1 };
    const table = { version: 't', models: { plain: own, searchy: { ...own, webSearch: 7 } }, default: { ...own, webSearch: 30 } };
    const o = withOverrides(table, [
      { model: 'plain', price: BASE, updatedAt: 0 },
      { model: 'searchy', price: BASE, updatedAt: 0 },
    ]);
    expect(priceFor(o, 'plain').webSearch).toBe(30);
    expect(priceFor(o, 'searchy').webSearch).toBe(7);
    // 2 × $7 / 1,000 = 14,000 µ$; 2 × $30 / 1,000 = 60,000 µ$
    expect(twoSearches(o, 'searchy')).toBe(14_000);
    expect(twoSearches(o, 'plain')).toBe(60_000);
  });
});

describe('flotilla.yaml price entries without cache rates', () => {
  it('take them from the input rate as the API and CLI do: × 1.25, × 2, × 0.1 (long-context rates too)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'flotilla-yaml-cache-'));
    const file = join(dir, 'flotilla.yaml');
    writeFileSync(file, ['gateway:', '  prices:', '    my-model: { input: 2, output: 8 }', '    my-long: { input: 4, output: 16, cacheRead: 0.3, longContext: { aboveInputTokens: 1000, input: 8, output: 32 } }'].join('\n'));
    const g = loadGatewayFile(file);
    expect(g.prices['my-model']).toEqual({ input: 2, output: 8, cacheWrite5m: 2.5, cacheWrite1h: 4, cacheRead: 0.2 });
    expect(g.prices['my-long']).toEqual({ input: 4, output: 16, cacheWrite5m: 5, cacheWrite1h: 8, cacheRead: 0.3, longContext: { aboveInputTokens: 1000, input: 8, output: 32, cacheWrite5m: 10, cacheWrite1h: 16, cacheRead: 0.8 } });
  });

  it('an unknown key is still refused, naming it', () => {
    const dir = mkdtempSync(join(tmpdir(), 'flotilla-yaml-cache-'));
    const file = join(dir, 'flotilla.yaml');
    writeFileSync(file, ['gateway:', '  prices:', '    my-model: { input: 2, output: 8, cachewrite: 3 }'].join('\n'));
    expect(() => loadGatewayFile(file)).toThrow(/cachewrite/);
  });
});

describe('flotilla.yaml rates are held to the API\'s range', () => {
  it('a rate past 1,000,000 USD per million tokens is refused, naming the field', () => {
    const dir = mkdtempSync(join(tmpdir(), 'flotilla-yaml-cap-'));
    const file = join(dir, 'flotilla.yaml');
    writeFileSync(file, ['gateway:', '  prices:', '    my-model: { input: 1000000000000, output: 8 }'].join('\n'));
    expect(() => loadGatewayFile(file)).toThrow(/my-model\.input/);
  });
});
