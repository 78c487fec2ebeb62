/**
 * The built CLI (bin/flotilla.js, a child process) sets a model's price override with its web
 * search price (`--web-search`, USD per 1,000), maximum output (`--max-output`, tokens) and
 * long-context rates (`--long-context-above TOKENS --long-context-input --long-context-output`,
 * cache rates by the input's ratios; or `--no-long-context`), each also from its
 * FLOTILLA_PRICE_* variable, against a real server with the shipped price table
 * (claude-sonnet-4-5 has long-context rates above 200,000 input-side tokens, so an override
 * that says neither is refused naming `price.longContext`). `--json` prints the API's row;
 * `models` lists what an override says beyond its token rates; bad flags exit 2.
 * Needs `npx tsc -p tsconfig.build.json` first (bin/flotilla.js runs dist/).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawnFlotilla } from './helpers.js';
import { loadPriceTable } from '../src/gateway/prices.js';
import { startTestServer, TEST_GATEWAY, type TestServer } from '../src/server/test-helpers.js';

let t: TestServer;

/** Runs the built CLI with no FLOTILLA_* variable but those in `env`; stdout and stderr apart. */
async function cli(args: string[], env: Record<string, string> = {}): Promise<{ code: number; out: string; err: string }> {
  const child = spawnFlotilla(args, env); // over process.env, whose FLOTILLA_* variables beforeAll removed
  let out = '';
  let err = '';
  child.stdout?.on('data', (d) => (out += d));
  child.stderr?.on('data', (d) => (err += d));
  const code = await new Promise<number>((resolve) => child.on('close', (c) => resolve(c ?? -1)));
  return { code, out, err };
}
const price = (args: string[], env: Record<string, string> = {}) => cli(['models', 'price', ...args, '--server', t.url, '--token', t.admin], env);

beforeAll(async () => {
  for (const k of Object.keys(process.env)) if (k.startsWith('FLOTILLA_')) delete process.env[k];
  t = await startTestServer({ gateway: { ...TEST_GATEWAY, prices: loadPriceTable() } });
});
afterAll(async () => {
  await t.close();
});

const BASE = { input: 2, output: 8, cacheWrite5m: 2.5, cacheWrite1h: 4, cacheRead: 0.2 };

describe('flotilla models price: web search, maximum output, long context', () => {
  it('--help names each flag and its variable', async () => {
    const help = await cli(['models', 'price', '--help']);
    expect(help.code).toBe(0);
    for (const [flag, env] of [
      ['--web-search <usd-per-1000>', 'FLOTILLA_PRICE_WEB_SEARCH'],
      ['--max-output <tokens>', 'FLOTILLA_PRICE_MAX_OUTPUT'],
      ['--long-context-above <tokens>', 'FLOTILLA_PRICE_LONG_CONTEXT_ABOVE'],
      ['--long-context-input <usd>', 'FLOTILLA_PRICE_LONG_CONTEXT_INPUT'],
      ['--long-context-output <usd>', 'FLOTILLA_PRICE_LONG_CONTEXT_OUTPUT'],
      ['--long-context-cache-write-5m <usd>', 'FLOTILLA_PRICE_LONG_CONTEXT_CACHE_WRITE_5M'],
      ['--long-context-cache-write-1h <usd>', 'FLOTILLA_PRICE_LONG_CONTEXT_CACHE_WRITE_1H'],
      ['--long-context-cache-read <usd>', 'FLOTILLA_PRICE_LONG_CONTEXT_CACHE_READ'],
      ['--no-long-context', 'FLOTILLA_PRICE_NO_LONG_CONTEXT'],
    ]) {
      expect(help.out).toContain(flag);
      expect(help.out.replace(/\s+/g, ' ')).toContain(`env: ${env}`);
    }
  });

  it('an override of claude-sonnet-4-5 that says nothing of long context is refused naming price.longContext and the flags', async () => {
    const text = await price(['claude-sonnet-4-5', '--input', '2', '--output', '8']);
    expect(text.code).toBe(1);
    expect(text.err).toMatch(/^flotilla: price\.longContext: the price table prices claude-sonnet-4-5 calls above 200000 input-side tokens/);
    expect(text.err).toMatch(/--long-context-above TOKENS --long-context-input USD --long-context-output USD, or --no-long-context\)\n$/);
    const json = await price(['claude-sonnet-4-5', '--input', '2', '--output', '8', '--json']);
    expect(json.code).toBe(1);
    expect(json.out).toBe('');
    expect(JSON.parse(json.err)).toMatchObject({ error: { code: 'invalid_request', status: 400, field: 'price.longContext' } });
    // FLOTILLA_PRICE_NO_LONG_CONTEXT=0 is not --no-long-context
    expect((await price(['claude-sonnet-4-5', '--input', '2', '--output', '8'], { FLOTILLA_PRICE_NO_LONG_CONTEXT: '0' })).code).toBe(1);
    expect(await t.store.listModelPrices()).toEqual([]);
  });

  it('flags set web search, maximum output and long-context rates (cache rates by the input\'s ratios); --json prints the row; models lists them', async () => {
    const set = await price(['claude-sonnet-4-5', '--input', '2', '--output', '8', '--web-search', '30', '--max-output', '2000', '--long-context-above', '100000', '--long-context-input', '4', '--long-context-output', '16', '--json']);
    expect(set.code, set.err).toBe(0);
    // 4 × 1.25 = 5, 4 × 2 = 8, 4 × 0.1 = 0.4
    const want = { ...BASE, webSearch: 30, maxOutput: 2000, longContext: { aboveInputTokens: 100_000, input: 4, output: 16, cacheWrite5m: 5, cacheWrite1h: 8, cacheRead: 0.4 } };
    expect(JSON.parse(set.out)).toEqual({ model: 'claude-sonnet-4-5', price: want, updatedAt: expect.any(String) });
    expect((await t.store.listModelPrices()).map((r) => r.price)).toEqual([want]);

    const list = await cli(['models', '--server', t.url, '--token', t.admin]);
    expect(list.code).toBe(0);
    expect(list.out).toMatch(/^claude-sonnet-4-5\s+2\s+8\s+2\.5\s+4\s+0\.2\s+api\s+table \S+ claude-sonnet-4-5\s*$/m);
    expect(list.out).toContain('  claude-sonnet-4-5: web search 30 USD per 1,000; max output 2000 tokens; long context above 100000 input-side tokens: input 4, output 16, cache write 5/8, cache read 0.4\n');
  });

  it('the same from FLOTILLA_PRICE_* variables; FLOTILLA_PRICE_NO_LONG_CONTEXT=1 prices flat; text output says what was set', async () => {
    const env = { FLOTILLA_PRICE_INPUT: '2', FLOTILLA_PRICE_OUTPUT: '8', FLOTILLA_PRICE_WEB_SEARCH: '12.5', FLOTILLA_PRICE_NO_LONG_CONTEXT: '1' };
    const flat = await price(['claude-sonnet-4-5'], env);
    expect(flat.code, flat.err).toBe(0);
    expect(flat.out).toBe("price override set: claude-sonnet-4-5 input 2, output 8, cache write 2.5/4, cache read 0.2 USD per million tokens; web search 12.5 USD per 1,000; no long-context rates (every call at the base rates); max output 64000 tokens as in the price table\n");
    expect((await t.store.listModelPrices()).map((r) => r.price)).toEqual([{ ...BASE, webSearch: 12.5, longContext: null }]);

    const long = await price(['claude-sonnet-4-5', '--input', '2', '--output', '8', '--json'], {
      FLOTILLA_PRICE_MAX_OUTPUT: '32000',
      FLOTILLA_PRICE_LONG_CONTEXT_ABOVE: '200000',
      FLOTILLA_PRICE_LONG_CONTEXT_INPUT: '4',
      FLOTILLA_PRICE_LONG_CONTEXT_OUTPUT: '12',
      FLOTILLA_PRICE_LONG_CONTEXT_CACHE_WRITE_5M: '4.5',
      FLOTILLA_PRICE_LONG_CONTEXT_CACHE_WRITE_1H: '7',
      FLOTILLA_PRICE_LONG_CONTEXT_CACHE_READ: '0.35',
    });
    expect(long.code, long.err).toBe(0);
    expect(JSON.parse(long.out).price).toEqual({ ...BASE, maxOutput: 32_000, longContext: { aboveInputTokens: 200_000, input: 4, output: 12, cacheWrite5m: 4.5, cacheWrite1h: 7, cacheRead: 0.35 } });
  });

  it('bad flags exit 2 naming them, and nothing changes', async () => {
    const before = await t.store.listModelPrices();
    const cases: Array<[string[], RegExp]> = [
      [['--max-output', '0'], /--max-output must be a whole number from 1 to 1000000/],
      [['--max-output', '64000.5'], /--max-output must be a whole number/],
      [['--web-search', '-1'], /--web-search must be USD per 1,000 searches/],
      [['--long-context-input', '4', '--long-context-output', '16'], /long-context rates need --long-context-above/],
      [['--long-context-above', '0', '--long-context-input', '4', '--long-context-output', '16'], /--long-context-above must be a whole number/],
      [['--no-long-context', '--long-context-above', '100000', '--long-context-input', '4', '--long-context-output', '16'], /--no-long-context cannot go with --long-context-\* rates/],
    ];
    for (const [args, message] of cases) {
      const r = await price(['claude-sonnet-4-5', '--input', '2', '--output', '8', ...args]);
      expect([r.code, r.err], args.join(' ')).toEqual([2, expect.stringMatching(message)]);
    }
    expect(await t.store.listModelPrices()).toEqual(before);
  });

  it('"default" is refused as a model to price (exit 2, nothing stored); an override of that name stored before can still be deleted', async () => {
    const before = await t.store.listModelPrices();
    const r = await price(['default', '--input', '2', '--output', '8']);
    expect([r.code, r.err]).toEqual([2, expect.stringContaining('models price: model must not be "default": that is the price table\'s entry for the models it does not list')]);
    expect(await t.store.listModelPrices()).toEqual(before);
    await t.store.setModelPrice('default', BASE, Date.now());
    const d = await price(['default', '--delete']);
    expect([d.code, d.out.trim()]).toEqual([0, 'price override deleted: default']);
    expect(await t.store.listModelPrices()).toEqual(before);
  });
});
