import { describe, expect, it } from 'vitest';
import { withGatewayFile } from '../../gateway/config-file.js';
import { loadGatewayConfig } from '../../gateway/config.js';
import { pricesInEffect } from '../../gateway/price-sources.js';
import type { ModelPriceRow } from '../../store/types.js';
import { inheritedLongContextWarnings } from './model-line.js';

/**
 * `up`'s warning for an API price override that gives no long-context rates of its own and
 * takes some from the entry it replaces: flotilla.yaml gained `kappa` with long-context rates
 * after `kappa-mini` was set through the API without any (a fresh tester: charged ~50× at the
 * next start, without a word). Real configuration building (withGatewayFile) and prices in
 * effect (price-sources.ts).
 */
describe('inheritedLongContextWarnings', () => {
  const base = loadGatewayConfig({});
  const apiRow: ModelPriceRow = { model: 'kappa-mini', price: { input: 1, output: 1, cacheWrite5m: 1.25, cacheWrite1h: 2, cacheRead: 0.1 }, updatedAt: 0 };
  const lc = { aboveInputTokens: 100, input: 50, output: 50, cacheWrite5m: 62.5, cacheWrite1h: 100, cacheRead: 5 };

  it('names the override, whose rates it takes, the rates and how to pin its own', () => {
    const config = withGatewayFile(base, { file: 'flotilla.yaml', routes: [], prices: { kappa: { input: 10, output: 10, cacheWrite5m: 12.5, cacheWrite1h: 20, cacheRead: 1, longContext: lc } } });
    expect(inheritedLongContextWarnings(pricesInEffect(config, [apiRow]), config.prices.version)).toEqual([
      "the API's price of kappa-mini gives no long-context rates of its own and takes flotilla.yaml kappa's: its calls above 100 input-side tokens are charged input 50, output 50 USD per million tokens under its own base rates (input 1, output 1); " +
        'give it its own with flotilla models price kappa-mini ... --long-context-above N --long-context-input USD --long-context-output USD, or --no-long-context',
    ]);
  });

  it('names where the rates were set, past API overrides that take them too (it named the nearest, the API\'s kappa-mini)', () => {
    const config = withGatewayFile(base, { file: 'flotilla.yaml', routes: [], prices: { kappa: { input: 10, output: 10, cacheWrite5m: 12.5, cacheWrite1h: 20, cacheRead: 1, longContext: lc } } });
    const longer: ModelPriceRow = { ...apiRow, model: 'kappa-mini-latest', price: { ...apiRow.price, input: 2, output: 2 } };
    const warnings = inheritedLongContextWarnings(pricesInEffect(config, [apiRow, longer]), config.prices.version);
    expect(warnings).toHaveLength(2);
    expect(warnings[0]).toContain('kappa-mini gives no long-context rates of its own and takes flotilla.yaml kappa\'s: ');
    expect(warnings[1]).toContain("kappa-mini-latest gives no long-context rates of its own and takes flotilla.yaml kappa's (through the API's kappa-mini): its calls above 100 input-side tokens are charged input 50, output 50 USD per million tokens under its own base rates (input 2, output 2)");
  });

  it('nothing when the entry it replaces has no long-context rates, or when it says its own (none)', () => {
    const flat = withGatewayFile(base, { file: 'flotilla.yaml', routes: [], prices: { kappa: { input: 10, output: 10, cacheWrite5m: 12.5, cacheWrite1h: 20, cacheRead: 1, longContext: null } } });
    expect(inheritedLongContextWarnings(pricesInEffect(flat, [apiRow]), flat.prices.version)).toEqual([]);
    const withLc = withGatewayFile(base, { file: 'flotilla.yaml', routes: [], prices: { kappa: { input: 10, output: 10, cacheWrite5m: 12.5, cacheWrite1h: 20, cacheRead: 1, longContext: lc } } });
    expect(inheritedLongContextWarnings(pricesInEffect(withLc, [{ ...apiRow, price: { ...apiRow.price, longContext: null } }]), withLc.prices.version)).toEqual([]);
  });
});
