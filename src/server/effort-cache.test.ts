import { describe, expect, it } from 'vitest';
import { EffortSettings } from './effort-cache.js';
import { DEFAULT_TIER_SETTING } from './effort-stored.js';

type Tier = { name: string; model: string; level: string };

/** A store whose effort reads are counted and, when `hold` is set, wait until released. */
function fakeStore(tiers: Tier[], defaultTier: string | null = null) {
  const s = {
    tiers,
    defaultTier,
    reads: 0,
    fail: false,
    held: [] as Array<() => void>,
    hold: false,
    async listEffortTiers() {
      s.reads++;
      const snapshot = s.tiers.map((t) => ({ ...t, updatedAt: 1 }));
      const fail = s.fail;
      if (s.hold) await new Promise<void>((r) => s.held.push(r));
      if (fail) throw new Error('store down');
      return snapshot;
    },
    async getSetting(key: string) {
      return key === DEFAULT_TIER_SETTING ? s.defaultTier : null;
    },
  };
  return s;
}

const env = {};

describe('EffortSettings', () => {
  it('reads the store at most once per TTL; the environment is merged on every call', async () => {
    let t = 1000;
    const store = fakeStore([{ name: 'cheap', model: 'm1', level: 'low' }], 'cheap');
    const e = new EffortSettings(store, 2000, () => t);
    expect(await e.get(env)).toEqual({ tiers: { cheap: { model: 'm1', level: 'low' } }, defaultTier: 'cheap', defaultSource: 'account' });
    store.tiers = [{ name: 'cheap', model: 'm2', level: 'high' }];
    t = 2999; // 1,999 ms later: the copy read at t=1000 is still used
    expect((await e.get(env)).tiers.cheap).toEqual({ model: 'm1', level: 'low' });
    // Another environment, same stored copy: its tiers are merged under the stored ones.
    const other = await e.get({ FLOTILLA_EFFORT_TIERS: '{"fast":{"model":"m-env","level":"medium"}}' });
    expect(other.tiers).toEqual({ fast: { model: 'm-env', level: 'medium' }, cheap: { model: 'm1', level: 'low' } });
    expect(store.reads).toBe(1);
    t = 3000; // 2,000 ms: read again
    expect((await e.get(env)).tiers.cheap).toEqual({ model: 'm2', level: 'high' });
    expect(store.reads).toBe(2);
  });

  it('calls at once share one read', async () => {
    const store = fakeStore([]);
    const e = new EffortSettings(store, 2000, () => 0);
    await Promise.all([e.get(env), e.get(env), e.get(env)]);
    expect(store.reads).toBe(1);
  });

  it('after invalidate, the next call reads again, and a read begun before it is neither cached nor shared', async () => {
    let t = 0;
    const store = fakeStore([{ name: 'cheap', model: 'old', level: 'low' }]);
    const e = new EffortSettings(store, 2000, () => t);
    store.hold = true;
    const before = e.get(env); // read 1 waits, with the old tier
    await Promise.resolve();
    store.tiers = [{ name: 'cheap', model: 'new', level: 'low' }];
    e.invalidate(); // the route changed it
    store.hold = false;
    expect((await e.get(env)).tiers.cheap?.model).toBe('new'); // read 2, not read 1's result
    store.held.splice(0).forEach((release) => release());
    expect((await before).tiers.cheap?.model).toBe('old');
    t = 1;
    expect((await e.get(env)).tiers.cheap?.model).toBe('new'); // read 1 did not overwrite the cache
    expect(store.reads).toBe(2);
  });

  it('a failed read is not cached', async () => {
    const store = fakeStore([]);
    const e = new EffortSettings(store, 2000, () => 0);
    store.fail = true;
    await expect(e.get(env)).rejects.toThrow('store down');
    store.fail = false;
    expect(await e.get(env)).toEqual({ tiers: {}, defaultTier: null, defaultSource: null });
    expect(store.reads).toBe(2);
  });
});
