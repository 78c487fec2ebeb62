import type { Store } from '../store/types.js';
import { accountEffort, type AccountEffort } from './effort.js';

/**
 * The account's effort settings with the tiers stored through `PUT /api/effort-tiers/:name`
 * (store, migration 0014) laid over those of `FLOTILLA_EFFORT_TIERS` (a stored tier wins over
 * an environment tier of the same name); the default tier stays `FLOTILLA_DEFAULT_EFFORT`.
 * @throws Error from `accountEffort` (bad FLOTILLA_EFFORT_TIERS) or from the store.
 */
export async function storedAccountEffort(store: Pick<Store, 'listEffortTiers'>, env: NodeJS.ProcessEnv = process.env): Promise<AccountEffort> {
  const base = accountEffort(env);
  const tiers = { ...base.tiers };
  for (const t of await store.listEffortTiers()) tiers[t.name] = { model: t.model, level: t.level };
  return { tiers, defaultTier: base.defaultTier };
}
