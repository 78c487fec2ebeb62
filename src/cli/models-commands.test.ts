import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { FlotillaClient } from '../client/index.js';
import { type RecordingIO, runCli } from './test-io.js';
import { startLocalUp, type LocalUp } from './test-up.js';

// `flotilla models ...` against a real `flotilla up --no-runner` (SQLite, HTTP) configured by a
// flotilla.yaml (FLOTILLA_CONFIG) and holding an upstream key that must never show.

const SECRET = 'sk-ant-models-test-SECRET-0123456789';
let up: LocalUp;
let data: string;
let upIO: RecordingIO;
let url: string;

const run = (...args: string[]) => runCli([...args, '--server', url]);

/** data/prices.json's version (the table the gateway prices with). */
const TABLE_VERSION = (JSON.parse(await readFile(new URL('../../data/prices.json', import.meta.url), 'utf8')) as { version: string }).version;
/**
 * flotilla.yaml's prices as the gateway applies them, worked out by hand from the file and
 * data/prices.json: cache rates left out are input × 1.25, × 2, × 0.1; web search and maximum
 * output left out are those of the entry replaced (qwen3-coder is not listed: the default
 * entry's $25 per 1,000 searches; Claude Haiku 4.5 / Sonnet 4.5: $10 and 64,000 tokens).
 */
const FILE_PRICES = [
  { model: 'qwen3-coder', price: { input: 0.5, output: 1, cacheWrite5m: 0.5, cacheWrite1h: 0.5, cacheRead: 0.05, webSearch: 25 }, source: 'flotilla.yaml', updatedAt: null, replaces: { source: 'table', model: null }, kept: ['webSearch'] },
  { model: 'claude-haiku-4-5', price: { input: 0.8, output: 4, cacheWrite5m: 1, cacheWrite1h: 1.6, cacheRead: 0.08, webSearch: 10, maxOutput: 64000 }, source: 'flotilla.yaml', updatedAt: null, replaces: { source: 'table', model: 'claude-haiku-4-5' }, kept: ['webSearch', 'maxOutput'] },
  {
    model: 'claude-sonnet-4-5',
    price: { input: 2.7, output: 13.5, cacheWrite5m: 3.375, cacheWrite1h: 5.4, cacheRead: 0.27, webSearch: 10, maxOutput: 64000, longContext: null },
    source: 'flotilla.yaml',
    updatedAt: null,
    replaces: { source: 'table', model: 'claude-sonnet-4-5' },
    kept: ['webSearch', 'maxOutput'],
  },
];

beforeAll(async () => {
  up = await startLocalUp('flotilla-models-cli-', {
    alsoClear: (k) => k.startsWith('OPENAI_'),
    before: async (dir) => {
      await writeFile(
        join(dir, 'flotilla.yaml'),
        'gateway:\n  models:\n    qwen*: openai-compatible\n    "*": scripted\n  prices:\n' +
          '    qwen3-coder: { input: 0.5, output: 1, cacheWrite5m: 0.5, cacheWrite1h: 0.5, cacheRead: 0.05 }\n' +
          '    claude-haiku-4-5: { input: 0.8, output: 4 }\n' +
          '    claude-sonnet-4-5: { input: 2.7, output: 13.5, longContext: null }\n',
      );
      process.env.FLOTILLA_CONFIG = join(dir, 'flotilla.yaml');
      process.env.ANTHROPIC_API_KEY = SECRET;
    },
  });
  ({ data, url, io: upIO } = up);
  delete process.env.ANTHROPIC_API_KEY;
});

afterAll(async () => {
  expect(await up.stop()).toBe(0);
  expect(upIO.out() + upIO.err()).not.toContain(SECRET);
});

describe('flotilla models', () => {
  it('lists configured routes, sets/deletes API routes and price overrides (admin), members read only, the key never shows', async () => {
    const first = await run('models', 'list', '--json');
    expect(first.code).toBe(0);
    expect(JSON.parse(first.out)).toEqual({
      routes: [
        {
          pattern: 'qwen*',
          provider: 'openai-compatible',
          source: 'config',
          updatedAt: null,
          // no FLOTILLA_OPENAI_COMPATIBLE_URL on this server
          warning: "provider openai-compatible is not configured on this server, so the calls this route takes are refused: set FLOTILLA_OPENAI_COMPATIBLE_URL (and FLOTILLA_OPENAI_COMPATIBLE_KEY if it needs a key) in the server's environment and restart it, or route these models to another provider",
        },
        { pattern: '*', provider: 'scripted', source: 'config', updatedAt: null },
      ],
      prices: [],
      pricesInEffect: FILE_PRICES,
      priceTableVersion: TABLE_VERSION,
      configured: true,
    });

    const set = await run('models', 'set', 'claude-*', 'anthropic');
    expect([set.code, set.out.trim(), set.err]).toEqual([0, 'route set: claude-* → anthropic', '']);
    // a route to a provider this server has no key for is set, and said to be refused until one is
    const unusable = await run('models', 'set', 'gpt-*', 'openai');
    expect([unusable.code, unusable.out.trim()]).toEqual([0, 'route set: gpt-* → openai']);
    expect(unusable.err).toMatch(/^warning: provider openai is not configured on this server, so the calls this route takes are refused: set OPENAI_API_KEY .* in the server's environment and restart it, or route these models to another provider\n$/);
    expect((await run('models')).out).toMatch(/^warning: route gpt-\*: provider openai is not configured on this server/m);
    expect((await run('models', 'delete', 'gpt-*')).code).toBe(0);
    process.env.FLOTILLA_JSON = '1';
    const def = await run('models', 'default', 'openai');
    delete process.env.FLOTILLA_JSON;
    expect(def.code).toBe(0);
    expect(JSON.parse(def.out)).toMatchObject({ pattern: '*', provider: 'openai', source: 'api' });
    const price = await run('models', 'price', 'my-model', '--input', '2', '--output', '10');
    expect(price.code).toBe(0);
    // a cache rate left out whose default (input × 2) is past 1,000,000: named by its flag, as a default
    const big = await run('models', 'price', 'my-model', '--input', '600000', '--output', '1');
    expect([big.code, big.err.trim()]).toEqual([2, 'flotilla: models price: --cache-write-1h: left out, it defaults to input × 2 = 1200000, past the most a rate may be (1000000): give --cache-write-1h']);
    // two past at once (fresh tester: the second named the API field and the first's flag): each its own flag
    const both = await run('models', 'price', 'my-model', '--input', '1000000', '--output', '1');
    expect([both.code, both.err.trim()]).toEqual([
      2,
      'flotilla: models price: --cache-write-5m: left out, it defaults to input × 1.25 = 1250000, past the most a rate may be (1000000): give --cache-write-5m; --cache-write-1h: left out, it defaults to input × 2 = 2000000, past the most a rate may be (1000000): give --cache-write-1h',
    ]);
    // an API override of a name flotilla.yaml prices wins over it (and keeps what it kept)
    const haiku = await run('models', 'price', 'claude-haiku-4-5', '--input', '.5', '--output', '2');
    expect(haiku.code, haiku.err).toBe(0);
    // what they leave out comes from the entry they replace: flotilla.yaml's, or the table's
    expect(haiku.out).toMatch(/; max output 64000 tokens as in flotilla\.yaml\n$/);
    // the table's default entry (my-model is not listed) has no max output: nothing is claimed kept (fresh tester)
    expect(price.out).toMatch(/ USD per million tokens\n$/);
    const table = await run('models');
    expect(table.code).toBe(0);
    // the order tried: API specific, configured specific, API default, configured default
    const rows = table.out.split('\n').filter((l) => /^(claude-\*|qwen\*|\*)/.test(l)).map((l) => l.split(/\s+/).slice(0, 3).join(' '));
    expect(rows).toEqual(['claude-* anthropic api', 'qwen* openai-compatible config', '* (default) openai', '* (default) scripted']);
    // every price in effect but the table's, where it came from and what it replaced
    expect(table.out).toContain(`prices: table ${TABLE_VERSION} for models not below; overrides in effect (USD per million tokens; api over flotilla.yaml over table):`);
    expect(table.out).toMatch(new RegExp(`^qwen3-coder\\s+0\\.5\\s+1\\s+0\\.5\\s+0\\.5\\s+0\\.05\\s+flotilla\\.yaml\\s+table ${TABLE_VERSION} default\\s*$`, 'm'));
    expect(table.out).toMatch(new RegExp(`^claude-sonnet-4-5\\s+2\\.7\\s+13\\.5\\s+3\\.375\\s+5\\.4\\s+0\\.27\\s+flotilla\\.yaml\\s+table ${TABLE_VERSION} claude-sonnet-4-5\\s*$`, 'm'));
    expect(table.out).toMatch(/^claude-haiku-4-5\s+0\.5\s+2\s+0\.625\s+1\s+0\.05\s+api\s+flotilla\.yaml claude-haiku-4-5\s*$/m);
    expect(table.out).toMatch(new RegExp(`^my-model\\s+2\\s+10\\s+2\\.5\\s+4\\s+0\\.2\\s+api\\s+table ${TABLE_VERSION} default\\s*$`, 'm')); // cache prices from the Anthropic ratios
    expect(table.out).toContain(`  claude-sonnet-4-5: web search 10 USD per 1,000; max output 64000 tokens; no long-context rates (every call at the base rates); web search, max output kept from table ${TABLE_VERSION} claude-sonnet-4-5\n`);
    expect(table.out).toContain('  claude-haiku-4-5: web search 10 USD per 1,000; max output 64000 tokens; web search, max output kept from flotilla.yaml claude-haiku-4-5\n');
    const listed = JSON.parse((await run('models', '--json')).out) as { pricesInEffect: unknown[] };
    expect(listed.pricesInEffect).toEqual([
      FILE_PRICES[0],
      // where the file has it, in the file's order
      { model: 'claude-haiku-4-5', price: { input: 0.5, output: 2, cacheWrite5m: 0.625, cacheWrite1h: 1, cacheRead: 0.05, webSearch: 10, maxOutput: 64000 }, source: 'api', updatedAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT/), replaces: { source: 'flotilla.yaml', model: 'claude-haiku-4-5' }, kept: ['webSearch', 'maxOutput'] },
      FILE_PRICES[2],
      { model: 'my-model', price: { input: 2, output: 10, cacheWrite5m: 2.5, cacheWrite1h: 4, cacheRead: 0.2, webSearch: 25 }, source: 'api', updatedAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT/), replaces: { source: 'table', model: null }, kept: ['webSearch'] },
    ]);

    // Members read; changing needs an admin.
    const admin = new FlotillaClient({ url, token: (await readFile(join(data, 'admin-token'), 'utf8')).trim() });
    const member = await admin.createApiToken({ name: 'dev', role: 'member' });
    const asMember = await run('models', 'set', 'gpt-*', 'openai', '--token', member.token);
    expect(asMember.code).toBe(1);
    expect(asMember.err).toMatch(/admin/);
    const readAsMember = await run('models', 'list', '--json', '--token', member.token);
    expect(readAsMember.code).toBe(0);
    expect(JSON.parse(readAsMember.out).routes).toHaveLength(4);

    // Bad input names what is wrong, and nothing changes.
    const badProvider = await run('models', 'set', 'gpt-*', 'bedrock');
    expect(badProvider.code).toBe(2);
    expect(badProvider.err).toMatch(/provider must be one of anthropic, scripted, openai, openai-compatible/);
    const badPattern = await run('models', 'set', 'gpt 5', 'openai');
    expect(badPattern.code).toBe(2);
    const badPrice = await run('models', 'price', 'm', '--input', '-1', '--output', '1');
    expect(badPrice.code).toBe(2);
    expect(badPrice.err).toMatch(/--input must be USD per million tokens/);
    const missing = await run('models', 'delete', 'nope-*');
    expect(missing.code).toBe(1);
    expect(missing.err).toMatch(/no API model route for pattern "nope-\*"/);

    expect((await run('models', 'delete', 'claude-*')).code).toBe(0);
    expect((await run('models', 'price', 'my-model', '--delete')).code).toBe(0);
    expect((await run('models', 'price', 'claude-haiku-4-5', '--delete')).code).toBe(0);
    const after = JSON.parse((await run('models', '--json')).out) as { routes: { pattern: string; source: string }[]; prices: unknown[]; pricesInEffect: unknown[] };
    expect(after.routes.map((r) => `${r.pattern}/${r.source}`)).toEqual(['qwen*/config', '*/api', '*/config']);
    expect(after.prices).toEqual([]);
    expect(after.pricesInEffect).toEqual(FILE_PRICES); // flotilla.yaml's claude-haiku-4-5 applies again
    expect(JSON.stringify(after) + table.out + first.out).not.toContain(SECRET);
  });

  it('up\'s first lines name the model routes of flotilla.yaml, with a warning for the route to a provider not configured', () => {
    // qwen* → openai-compatible: FLOTILLA_OPENAI_COMPATIBLE_URL is not set for this up; * → scripted.
    const lines = upIO.out().split('\n');
    const at = lines.findIndex((l) => l.startsWith('flotilla: server on '));
    expect(lines.slice(at + 1, at + 3)).toEqual([
      'flotilla: model routes: qwen* → openai-compatible (not configured: its calls will fail); * (any other model) → the offline scripted model',
      'flotilla: warning: model route qwen* maps models to provider openai-compatible, which is not configured on this server: set FLOTILLA_OPENAI_COMPATIBLE_URL (and FLOTILLA_OPENAI_COMPATIBLE_KEY if it needs a key), or route those models to another provider (flotilla.yaml gateway.models, FLOTILLA_MODEL_PROVIDERS)',
    ]);
  });

  it('price --delete with a price flag (or its variable) is a usage error naming them, and deletes nothing', async () => {
    expect((await run('models', 'price', 'keep-me', '--input', '1', '--output', '2')).code).toBe(0);
    const both = await run('models', 'price', 'keep-me', '--input', '3', '--output', '4', '--delete');
    expect([both.code, both.err]).toEqual([2, 'flotilla: models price: --delete cannot go with --input, --output: --delete removes the override of "keep-me", those set a price; give one or the other (nothing was deleted)\n']);
    process.env.FLOTILLA_PRICE_CACHE_READ = '0.5';
    const env = await run('models', 'price', 'keep-me', '--delete', '--no-long-context');
    delete process.env.FLOTILLA_PRICE_CACHE_READ;
    expect([env.code, env.err]).toEqual([2, 'flotilla: models price: --delete cannot go with --cache-read (FLOTILLA_PRICE_CACHE_READ), --no-long-context: --delete removes the override of "keep-me", those set a price; give one or the other (nothing was deleted)\n']);
    // --delete from its variable: the message names the variable (it named a flag never typed: a fresh tester)
    process.env.FLOTILLA_PRICE_DELETE = '1';
    const envDelete = await run('models', 'price', 'keep-me', '--input', '1', '--output', '1');
    delete process.env.FLOTILLA_PRICE_DELETE;
    expect([envDelete.code, envDelete.err]).toEqual([2, 'flotilla: models price: --delete (FLOTILLA_PRICE_DELETE) cannot go with --input, --output: --delete removes the override of "keep-me", those set a price; give one or the other (nothing was deleted)\n']);
    // a boolean variable turned off does not count
    process.env.FLOTILLA_PRICE_NO_LONG_CONTEXT = '0';
    const json = await run('models', 'price', 'keep-me', '--max-output', '100', '--delete', '--json');
    expect([json.code, JSON.parse(json.err)]).toEqual([2, { error: { message: 'models price: --delete cannot go with --max-output: --delete removes the override of "keep-me", those set a price; give one or the other (nothing was deleted)', code: 'usage' } }]);
    const kept = JSON.parse((await run('models', '--json')).out) as { prices: { model: string; price: { input: number; output: number } }[] };
    expect(kept.prices.find((p) => p.model === 'keep-me')?.price).toMatchObject({ input: 1, output: 2 });
    // the variable off and nothing else: the delete goes through
    const del = await run('models', 'price', 'keep-me', '--delete');
    delete process.env.FLOTILLA_PRICE_NO_LONG_CONTEXT;
    expect([del.code, del.out]).toEqual([0, 'price override deleted: keep-me\n']);
  });

  it('price --delete of a model only flotilla.yaml prices says the price comes from flotilla.yaml; a model priced nowhere keeps the API\'s message', async () => {
    const file = await run('models', 'price', 'qwen3-coder', '--delete');
    expect(file.code).toBe(1);
    expect(file.err).toBe(
      'flotilla: no API price override for model "qwen3-coder": its price comes from the server\'s flotilla.yaml (gateway.prices), which `flotilla models price --delete` cannot change; only overrides set through the API (`flotilla models price`) can be deleted: edit flotilla.yaml and restart the server, or set an override over it\n',
    );
    const json = await run('models', 'price', 'qwen3-coder', '--delete', '--json');
    expect([json.code, (JSON.parse(json.err) as { error: { code: string } }).error.code]).toEqual([1, 'not_found']);
    const nowhere = await run('models', 'price', 'priced-nowhere', '--delete');
    expect(nowhere.code).toBe(1);
    expect(nowhere.err).toMatch(/no price override set through the API for model "priced-nowhere"/);
    expect(nowhere.err).not.toMatch(/flotilla\.yaml/);
    // flotilla.yaml's price is still in effect
    const view = JSON.parse((await run('models', '--json')).out) as { pricesInEffect: unknown[] };
    expect(view.pricesInEffect).toContainEqual(FILE_PRICES[0]);
  });
});
