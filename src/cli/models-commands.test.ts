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

beforeAll(async () => {
  up = await startLocalUp('flotilla-models-cli-', {
    alsoClear: (k) => k.startsWith('OPENAI_'),
    before: async (dir) => {
      await writeFile(join(dir, 'flotilla.yaml'), 'gateway:\n  models:\n    qwen*: openai-compatible\n    "*": scripted\n  prices:\n    qwen3-coder: { input: 0.5, output: 1, cacheWrite5m: 0.5, cacheWrite1h: 0.5, cacheRead: 0.05 }\n');
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
        { pattern: 'qwen*', provider: 'openai-compatible', source: 'config', updatedAt: null },
        { pattern: '*', provider: 'scripted', source: 'config', updatedAt: null },
      ],
      prices: [],
      priceTableVersion: expect.any(String),
      configured: true,
    });

    const set = await run('models', 'set', 'claude-*', 'anthropic');
    expect([set.code, set.out.trim()]).toEqual([0, 'route set: claude-* → anthropic']);
    process.env.FLOTILLA_JSON = '1';
    const def = await run('models', 'default', 'openai');
    delete process.env.FLOTILLA_JSON;
    expect(def.code).toBe(0);
    expect(JSON.parse(def.out)).toMatchObject({ pattern: '*', provider: 'openai', source: 'api' });
    const price = await run('models', 'price', 'my-model', '--input', '2', '--output', '10');
    expect(price.code).toBe(0);
    const table = await run('models');
    expect(table.code).toBe(0);
    // the order tried: API specific, configured specific, API default, configured default
    const rows = table.out.split('\n').filter((l) => /^(claude|qwen|\*)/.test(l)).map((l) => l.split(/\s+/).slice(0, 3).join(' '));
    expect(rows).toEqual(['claude-* anthropic api', 'qwen* openai-compatible config', '* (default) openai', '* (default) scripted']);
    expect(table.out).toMatch(/^my-model\s+2\s+10\s+2\.5\s+4\s+0\.2\s*$/m); // cache prices from the Anthropic ratios

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
    const after = JSON.parse((await run('models', '--json')).out) as { routes: { pattern: string; source: string }[]; prices: unknown[] };
    expect(after.routes.map((r) => `${r.pattern}/${r.source}`)).toEqual(['qwen*/config', '*/api', '*/config']);
    expect(after.prices).toEqual([]);
    expect(JSON.stringify(after) + table.out + first.out).not.toContain(SECRET);
  });
});
