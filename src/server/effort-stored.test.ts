import { describe, expect, it } from 'vitest';
import { storedAccountEffort, DEFAULT_TIER_SETTING } from './effort-stored.js';

/** A store holding only what storedAccountEffort reads. */
function fakeStore(tiers: Array<{ name: string; model: string; level: string }>, settings: Record<string, unknown>) {
  return {
    listEffortTiers: async () => tiers.map((t) => ({ ...t, updatedAt: 1 })),
    getSetting: async (key: string) => settings[key] ?? null,
  };
}

describe('storedAccountEffort', () => {
  it('the stored default wins over FLOTILLA_DEFAULT_EFFORT, which applies when none is stored; stored tiers over configured ones', async () => {
    const env = { FLOTILLA_DEFAULT_EFFORT: 'high', FLOTILLA_EFFORT_TIERS: '{"cheap":{"model":"m-env","level":"low"}}' };
    expect(await storedAccountEffort(fakeStore([], {}), env)).toEqual({ tiers: { cheap: { model: 'm-env', level: 'low' } }, defaultTier: 'high', defaultSource: 'config' });
    const stored = await storedAccountEffort(fakeStore([{ name: 'cheap', model: 'm-db', level: 'medium' }], { [DEFAULT_TIER_SETTING]: 'cheap' }), env);
    expect(stored).toEqual({ tiers: { cheap: { model: 'm-db', level: 'medium' } }, defaultTier: 'cheap', defaultSource: 'account' });
    expect(await storedAccountEffort(fakeStore([], {}), {})).toEqual({ tiers: {}, defaultTier: null, defaultSource: null });
  });
});
