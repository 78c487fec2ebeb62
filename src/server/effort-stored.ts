import type { Store } from '../store/types.js';
import { accountEffort, type AccountEffort } from './effort.js';

/** The store setting that holds the default tier set through `PUT /api/effort-default` (migration 0016 `settings`). */
export const DEFAULT_TIER_SETTING = 'effort.defaultTier';

/** The account's effort settings and where its default tier comes from (`account`: stored; `config`: FLOTILLA_DEFAULT_EFFORT; null: none). */
export interface StoredAccountEffort extends AccountEffort {
  defaultSource: 'account' | 'config' | null;
}

/**
 * The account's effort settings with the tiers stored through `PUT /api/effort-tiers/:name`
 * (store, migration 0014) laid over those of `FLOTILLA_EFFORT_TIERS` (a stored tier wins over
 * an environment tier of the same name), and the default tier stored through
 * `PUT /api/effort-default` (0016) over `FLOTILLA_DEFAULT_EFFORT`.
 * @throws Error from `accountEffort` (bad FLOTILLA_EFFORT_TIERS) or from the store.
 */
export async function storedAccountEffort(store: Pick<Store, 'listEffortTiers' | 'getSetting'>, env: NodeJS.ProcessEnv = process.env): Promise<StoredAccountEffort> {
  const base = accountEffort(env);
  const tiers = { ...base.tiers };
  const [rows, stored] = await Promise.all([store.listEffortTiers(), store.getSetting(DEFAULT_TIER_SETTING)]);
  for (const t of rows) tiers[t.name] = { model: t.model, level: t.level };
  if (typeof stored === 'string') return { tiers, defaultTier: stored, defaultSource: 'account' };
  return { tiers, defaultTier: base.defaultTier, defaultSource: base.defaultTier ? 'config' : null };
}
