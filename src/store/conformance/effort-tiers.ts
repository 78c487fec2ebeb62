import { expect, it } from 'vitest';
import { T, type Harness } from './harness.js';

/** The account's effort tiers (store/effort-tiers.ts, migration 0014). */
export function effortTierTests(h: Harness): void {
  it('effort tiers: set, replace, list by name, delete; seen by another instance', async () => {
    const s = await h.open();
    expect(await s.listEffortTiers()).toEqual([]);
    expect(await s.setEffortTier('cheap', 'claude-haiku-4-5', 'low', T)).toEqual({ name: 'cheap', model: 'claude-haiku-4-5', level: 'low', updatedAt: T });
    await s.setEffortTier('max', 'claude-opus-4-6', 'xhigh', T + 1);
    await s.setEffortTier('cheap', 'claude-sonnet-4-5', 'medium', T + 2);
    const other = await h.another(s);
    expect(await other.listEffortTiers()).toEqual([
      { name: 'cheap', model: 'claude-sonnet-4-5', level: 'medium', updatedAt: T + 2 },
      { name: 'max', model: 'claude-opus-4-6', level: 'xhigh', updatedAt: T + 1 },
    ]);
    expect(await other.deleteEffortTier('cheap')).toBe(true);
    expect(await s.deleteEffortTier('cheap')).toBe(false);
    expect((await s.listEffortTiers()).map((t) => t.name)).toEqual(['max']);
  });

  it('effort tiers: bad input names the field and stores nothing', async () => {
    const s = await h.open();
    await s.setEffortTier('keep', 'm', 'high', T);
    await expect(s.setEffortTier('Bad Name', 'm', 'high', T)).rejects.toThrow(/name must match/);
    await expect(s.setEffortTier('keep', '', 'high', T)).rejects.toThrow(/model must be/);
    await expect(s.setEffortTier('keep', 'm', 'extreme', T)).rejects.toThrow(/level must be one of low, medium, high, xhigh, max/);
    await expect(s.setEffortTier('keep', 'm', 'low', -1)).rejects.toThrow(/now/);
    expect(await s.listEffortTiers()).toEqual([{ name: 'keep', model: 'm', level: 'high', updatedAt: T }]);
  });
}
