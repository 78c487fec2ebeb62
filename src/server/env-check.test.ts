import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStore } from '../store/open.js';
import type { Store } from '../store/types.js';
import { DEFAULT_TIER_SETTING } from './effort-stored.js';
import { checkServerEnv } from './env-check.js';
import { startTestServer } from './test-helpers.js';

describe('checkServerEnv (real SQLite store)', () => {
  let dir: string;
  let store: Store;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'flotilla-envcheck-'));
    store = await openStore({ dataDir: dir });
  });
  afterAll(async () => {
    await store.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('accepts good settings and the built-in, configured and stored tiers as the default', async () => {
    expect(await checkServerEnv(store, {})).toEqual([]);
    expect(await checkServerEnv(store, { FLOTILLA_DEFAULT_EFFORT: 'high', FLOTILLA_TREE_MAX_DEPTH: '2', FLOTILLA_TREE_MAX_JOBS: '9' })).toEqual([]);
    expect(await checkServerEnv(store, { FLOTILLA_DEFAULT_EFFORT: 'cheap', FLOTILLA_EFFORT_TIERS: '{"cheap":{"model":"claude-haiku-4-5","level":"low"}}' })).toEqual([]);
  });

  it('refuses each bad variable, naming it', async () => {
    await expect(checkServerEnv(store, { FLOTILLA_EFFORT_TIERS: '{bad' })).rejects.toThrow(/^FLOTILLA_EFFORT_TIERS: not JSON/);
    await expect(checkServerEnv(store, { FLOTILLA_EFFORT_TIERS: '{"cheap":{"model":"a","level":"low"},"cheap":{"model":"b","level":"low"}}' })).rejects.toThrow('FLOTILLA_EFFORT_TIERS: field cheap: given twice; give each once');
    await expect(checkServerEnv(store, { FLOTILLA_EFFORT_TIERS: '{"cheap":{"model":"--help","level":"low"}}' })).rejects.toThrow(
      "FLOTILLA_EFFORT_TIERS: field cheap.model: must be 1-200 characters of letters, digits, . _ : @ / + - [ ], starting with a letter or digit (the harness's --model)",
    );
    await expect(checkServerEnv(store, { FLOTILLA_DEFAULT_EFFORT: 'bogus' })).rejects.toThrow('FLOTILLA_DEFAULT_EFFORT: unknown tier "bogus"; known tiers: high, max, medium');
    await expect(checkServerEnv(store, { FLOTILLA_TREE_MAX_DEPTH: 'abc' })).rejects.toThrow('FLOTILLA_TREE_MAX_DEPTH must be an integer from 0 to 100, got "abc"');
    expect(await checkServerEnv(store, { FLOTILLA_TREE_MAX_DEPTH: 'abc' }, true)).toEqual([]); // limits given to the server
  });

  it('a stored default naming no tier is a warning, not a refusal (an admin must be able to start the server to fix it)', async () => {
    await store.setSetting(DEFAULT_TIER_SETTING, 'gone', Date.now());
    try {
      const w = await checkServerEnv(store, {});
      expect(w).toEqual(['the stored default effort tier "gone" names no tier (known: high, max, medium); jobs without a tier are refused until an admin sets another (flotilla tiers default NAME)']);
      // a bad FLOTILLA_DEFAULT_EFFORT is refused even while a stored default hides it
      await store.setSetting(DEFAULT_TIER_SETTING, 'high', Date.now());
      await expect(checkServerEnv(store, { FLOTILLA_DEFAULT_EFFORT: 'nosuch' })).rejects.toThrow('FLOTILLA_DEFAULT_EFFORT: unknown tier "nosuch"; known tiers: high, max, medium');
    } finally {
      await store.setSetting(DEFAULT_TIER_SETTING, null, Date.now());
    }
  });

  it('startServer refuses to start with a bad FLOTILLA_TREE_MAX_JOBS', async () => {
    process.env.FLOTILLA_TREE_MAX_JOBS = '0';
    try {
      await expect(startTestServer()).rejects.toThrow('FLOTILLA_TREE_MAX_JOBS must be an integer from 1 to 100000, got "0"');
    } finally {
      delete process.env.FLOTILLA_TREE_MAX_JOBS;
    }
  });
});
