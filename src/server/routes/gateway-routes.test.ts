import { describe, expect, it } from 'vitest';
import type { GatewayConfig } from '../../gateway/config.js';
import { loadPriceTable } from '../../gateway/prices.js';
import { resolveProvider } from '../../gateway/model-directory.js';
import { routesInOrder } from './gateway-routes.js';

describe('routesInOrder', () => {
  it('lists routes in the order the gateway tries them: equally specific API globs in code-unit order, whatever the store order', () => {
    const rows = [
      { pattern: 'B*a*', provider: 'anthropic', updatedAt: 0 },
      { pattern: 'B*B*', provider: 'openai-compatible', updatedAt: 0 },
      { pattern: '*', provider: 'scripted', updatedAt: 0 },
      { pattern: 'exact-name', provider: 'scripted', updatedAt: 0 },
    ];
    const config: GatewayConfig = { provider: 'anthropic', anthropicBaseUrl: 'http://x', prices: loadPriceTable(), modelProviders: [{ pattern: 'q*', provider: 'openai-compatible' }, { pattern: '*', provider: 'anthropic' }] };
    for (const order of [rows, [...rows].reverse()]) {
      expect(routesInOrder(order, config).map((r) => `${r.pattern}:${r.source}`)).toEqual(['exact-name:api', 'B*B*:api', 'B*a*:api', 'q*:config', '*:api', '*:config']);
      // the first listed route that matches is the one the gateway uses ('B' U+0042 before 'a' U+0061)
      expect(resolveProvider(order, config.modelProviders, 'BaB', 'anthropic')).toBe('openai-compatible');
    }
  });
});
