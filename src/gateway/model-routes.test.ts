import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createGateway } from './gateway.js';
import { configFilePath, loadGatewayFile, withGatewayFile } from './config-file.js';
import { globMatches, ModelDirectory, resolveProvider } from './model-directory.js';
import { MemoryGatewayStore } from './memory-store.js';
import { loadPriceTable } from './prices.js';
import { parseModelScript } from './script.js';
import { ModelPattern } from '../protocol/index.js';

const TOKEN = 'flj_routes_test_0123456789abcdef';
const script = parseModelScript({ model: 'my-model', turns: [{ usage: { input_tokens: 1000, output_tokens: 2000 }, content: [{ text: 'hi' }] }] });
const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

describe('model routes: matching and order', () => {
  it('globs match whole names', () => {
    expect(globMatches('claude-*', 'claude-sonnet-4-5')).toBe(true);
    expect(globMatches('claude-*', 'claude')).toBe(false);
    expect(globMatches('*-mini', 'gpt-4o-mini')).toBe(true);
    expect(globMatches('gpt-*-mini', 'gpt-4o-mini')).toBe(true);
    expect(globMatches('gpt-*-mini', 'gpt-4o')).toBe(false);
    expect(globMatches('a*a', 'a')).toBe(false);
    expect(globMatches('qwen3', 'qwen3')).toBe(true);
    expect(globMatches('*', 'anything')).toBe(true);
  });

  it('API globs as specific as each other: the first in code-unit order wins, whatever order the store lists them in (the list: server/routes/gateway-routes.test.ts)', () => {
    const rows = [
      { pattern: 'B*a*', provider: 'anthropic', updatedAt: 0 },
      { pattern: 'B*B*', provider: 'openai-compatible', updatedAt: 0 },
    ];
    // 'B' (U+0042) sorts before 'a' (U+0061); a locale's collation puts 'a' first
    expect(resolveProvider(rows, undefined, 'BaB', 'anthropic')).toBe('openai-compatible');
    expect(resolveProvider([...rows].reverse(), undefined, 'BaB', 'anthropic')).toBe('openai-compatible');
  });

  it('a run of * is refused as a pattern (** ranked above every configured route)', () => {
    expect(ModelPattern.safeParse('**').success).toBe(false);
    expect(ModelPattern.safeParse('claude-**').error?.issues[0]?.message).toBe('must not hold ** (a run of * matches what one * does: write one)');
    expect(ModelPattern.safeParse('claude-*-*').success).toBe(true);
  });

  it('API routes (exact, then most specific glob) before configured ones, then the API default, then the configured default', () => {
    const api = [
      { pattern: 'claude-*', provider: 'anthropic', updatedAt: 0 },
      { pattern: 'claude-haiku-*', provider: 'scripted', updatedAt: 0 },
      { pattern: '*', provider: 'openai', updatedAt: 0 },
    ];
    const config = [
      { pattern: 'qwen*', provider: 'openai-compatible' as const },
      { pattern: '*', provider: 'scripted' as const },
    ];
    expect(resolveProvider(api, config, 'claude-haiku-4-5', 'anthropic')).toBe('scripted');
    expect(resolveProvider(api, config, 'claude-opus-4-1', 'anthropic')).toBe('anthropic');
    expect(resolveProvider(api, config, 'qwen3-coder', 'anthropic')).toBe('openai-compatible');
    expect(resolveProvider(api, config, 'gpt-5', 'anthropic')).toBe('openai'); // API default over config default
    expect(resolveProvider([], config, 'gpt-5', 'anthropic')).toBe('scripted');
    expect(resolveProvider([], [{ pattern: 'qwen*', provider: 'openai-compatible' }], 'gpt-5', 'anthropic')).toBeNull(); // routes but no default: unknown
    expect(resolveProvider([], undefined, 'gpt-5', 'anthropic')).toBe('anthropic'); // nothing configured: the wire format's own
  });

  it('flotilla.yaml: the gateway section gives routes in file order and price overrides; bad fields are named', () => {
    const dir = mkdtempSync(join(tmpdir(), 'flotilla-yaml-'));
    dirs.push(dir);
    const file = join(dir, 'flotilla.yaml');
    writeFileSync(file, 'gateway:\n  models:\n    claude-*: anthropic\n    "*": scripted\n  prices:\n    my-model: { input: 1, output: 2, cacheWrite5m: 1.25, cacheWrite1h: 2, cacheRead: 0.1 }\n');
    expect(configFilePath({}, dir)).toBe(file);
    expect(configFilePath({ FLOTILLA_CONFIG: 'flotilla.yaml' }, dir)).toBe(file);
    expect(() => configFilePath({ FLOTILLA_CONFIG: 'nope.yaml' }, dir)).toThrow(/FLOTILLA_CONFIG: no such file/);
    const f = loadGatewayFile(file);
    expect(f.routes).toEqual([
      { pattern: 'claude-*', provider: 'anthropic' },
      { pattern: '*', provider: 'scripted' },
    ]);
    const merged = withGatewayFile({ provider: 'scripted', anthropicBaseUrl: 'x', prices: loadPriceTable(), modelProviders: [{ pattern: 'gpt-*', provider: 'openai' }] }, f);
    expect(merged.modelProviders?.map((r) => r.pattern)).toEqual(['claude-*', '*', 'gpt-*']);
    expect(merged.prices.models['my-model']).toEqual({ input: 1, output: 2, cacheWrite5m: 1.25, cacheWrite1h: 2, cacheRead: 0.1 });
    writeFileSync(file, 'gateway:\n  models:\n    claude-*: bedrock\n');
    expect(() => loadGatewayFile(file)).toThrow(/gateway\.models\.claude-\*/);
    writeFileSync(file, 'gateway:\n  prices:\n    m: { input: 1 }\n');
    expect(() => loadGatewayFile(file)).toThrow(/gateway\.prices\.m\.output/);
  });

  it('flotilla.yaml prices take webSearch, maxOutput and longContext as data/prices.json does; a bad one is named', () => {
    const dir = mkdtempSync(join(tmpdir(), 'flotilla-yaml-'));
    dirs.push(dir);
    const file = join(dir, 'flotilla.yaml');
    const long = '{ aboveInputTokens: 100000, input: 2, output: 4, cacheWrite5m: 2.5, cacheWrite1h: 4, cacheRead: 0.2 }';
    writeFileSync(file, `gateway:\n  prices:\n    m: { input: 1, output: 2, cacheWrite5m: 1.25, cacheWrite1h: 2, cacheRead: 0.1, webSearch: 10, maxOutput: 16000, longContext: ${long} }\n`);
    expect(loadGatewayFile(file).prices.m).toEqual({ input: 1, output: 2, cacheWrite5m: 1.25, cacheWrite1h: 2, cacheRead: 0.1, webSearch: 10, maxOutput: 16_000, longContext: { aboveInputTokens: 100_000, input: 2, output: 4, cacheWrite5m: 2.5, cacheWrite1h: 4, cacheRead: 0.2 } });
    writeFileSync(file, 'gateway:\n  prices:\n    m: { input: 1, output: 2, cacheWrite5m: 1, cacheWrite1h: 1, cacheRead: 0.1, longContext: { aboveInputTokens: 1, input: 1 } }\n');
    expect(() => loadGatewayFile(file)).toThrow(/gateway\.prices\.m\.longContext\.output/);
    writeFileSync(file, 'gateway:\n  prices:\n    m: { input: 1, output: 2, cacheWrite5m: 1, cacheWrite1h: 1, cacheRead: 0.1, maxOutput: -5 }\n');
    expect(() => loadGatewayFile(file)).toThrow(/gateway\.prices\.m\.maxOutput/);
  });
});

describe('model routes and price overrides set through the API reach the gateway', () => {
  it('an unknown model becomes known once a route is set; a price override prices the call', async () => {
    const store = new MemoryGatewayStore();
    store.addJob(TOKEN, { id: 7, budgetMicros: 10_000_000 });
    let t = 1_000;
    const config = { provider: 'scripted' as const, anthropicBaseUrl: 'http://unused', prices: loadPriceTable(), modelProviders: [{ pattern: 'claude-*', provider: 'scripted' as const }] };
    const directory = new ModelDirectory(store, config.modelProviders, config.prices, 2000, () => t);
    const app = createGateway({ store, config, directory, scriptFor: async () => script });
    const call = (model: string) => app.request('/v1/messages', { method: 'POST', headers: { 'x-api-key': TOKEN }, body: JSON.stringify({ model, max_tokens: 4000, messages: [{ role: 'user', content: 'hi' }] }) });

    const unknown = await call('my-model');
    expect(unknown.status).toBe(404);
    expect(((await unknown.json()) as { error: { message: string } }).error.message).toMatch(/unknown model "my-model": no model route matches it/);

    // Another replica sets a route and a price: seen after the directory's TTL...
    store.routes.set('my-*', 'scripted');
    store.prices.set('my-model', { input: 2, output: 10, cacheWrite5m: 2.5, cacheWrite1h: 4, cacheRead: 0.2 });
    expect((await call('my-model')).status).toBe(404);
    t += 2000;
    const ok = await call('my-model');
    expect(ok.status).toBe(200);
    await ok.arrayBuffer();
    // 1,000 input × $2/M + 2,000 output × $10/M = 2,000 + 20,000 = 22,000 µ$
    const row = store.calls.at(-1)!;
    expect([row.model, row.inputTokens, row.outputTokens, row.costMicros]).toEqual(['my-model', 1000, 2000, 22_000]);

    // ...and at once after this process's API invalidates it.
    store.routes.delete('my-*');
    directory.invalidate();
    expect((await call('my-model')).status).toBe(404);
    expect(store.reservations.size).toBe(0);
  });
});

describe('ModelDirectory.knownModels (GET /v1/models)', () => {
  const P = { input: 1, output: 2, cacheWrite5m: 1.25, cacheWrite1h: 2, cacheRead: 0.1 };
  const table = { version: 'v', models: { 'b-model': P, 'a-model': P }, default: P };
  it('without routes: every priced name, at the fallback provider, in code-point order', async () => {
    const d = new ModelDirectory(null, undefined, table);
    expect(await d.knownModels('scripted')).toEqual({ version: 'v', models: [{ id: 'a-model', provider: 'scripted' }, { id: 'b-model', provider: 'scripted' }] });
  });
  it('with routes: names no route matches are left out; exact API and configured patterns are names too', async () => {
    const store = { listModelRoutes: async () => [{ pattern: 'Z-api', provider: 'openai', updatedAt: 0 }], listModelPrices: async () => [] };
    const d = new ModelDirectory(store, [{ pattern: 'a-*', provider: 'anthropic' }, { pattern: 'local', provider: 'scripted' }], table);
    expect((await d.knownModels('anthropic')).models).toEqual([
      { id: 'Z-api', provider: 'openai' },
      { id: 'a-model', provider: 'anthropic' },
      { id: 'local', provider: 'scripted' },
    ]);
  });
});
