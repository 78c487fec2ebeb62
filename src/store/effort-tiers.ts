import { num } from './codec.js';
import { assertInt, type StoreCtx } from './ctx.js';
import { EFFORT_LEVELS } from '../core/effort.js';
import type { EffortTierRow } from './effort-tiers-types.js';

/** The account's effort tiers (issue 8, migration 0014): name → model + effort level. */

/** Tier names: as FLOTILLA_EFFORT_TIERS takes them (server/effort.ts). */
export const TIER_NAME = /^[a-z][a-z0-9-]{0,63}$/;

function check(name: string, model: string, level: string, now: number): void {
  if (typeof name !== 'string' || !TIER_NAME.test(name)) throw new Error(`store: name must match ${TIER_NAME.source}, got ${JSON.stringify(name)}`);
  if (typeof model !== 'string' || model.trim().length === 0 || model.length > 200) throw new Error('store: model must be a string of 1 to 200 characters');
  if (!(EFFORT_LEVELS as readonly string[]).includes(level)) throw new Error(`store: level must be one of ${EFFORT_LEVELS.join(', ')}, got ${JSON.stringify(level)}`);
  assertInt('now', now, 0);
}

/** Every stored tier, name ascending. */
export async function listEffortTiers(c: StoreCtx): Promise<EffortTierRow[]> {
  const rows = await c.db.selectFrom('effort_tiers').select(['name', 'model', 'level', 'updated_at']).orderBy('name').execute();
  return rows.map((r) => ({ name: r.name, model: r.model, level: r.level, updatedAt: num(r.updated_at) }));
}

/** Creates or replaces tier `name`. @throws Error naming the bad field (nothing stored). */
export async function setEffortTier(c: StoreCtx, name: string, model: string, level: string, now: number): Promise<EffortTierRow> {
  check(name, model, level, now);
  await c.db
    .insertInto('effort_tiers')
    .values({ name, model, level, updated_at: now })
    .onConflict((oc) => oc.column('name').doUpdateSet({ model, level, updated_at: now }))
    .execute();
  return { name, model, level, updatedAt: now };
}

/** Deletes tier `name`; false when there was none. */
export async function deleteEffortTier(c: StoreCtx, name: string): Promise<boolean> {
  const res = await c.db.deleteFrom('effort_tiers').where('name', '=', name).executeTakeFirst();
  return Number(res.numDeletedRows) > 0;
}
