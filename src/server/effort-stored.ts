import type { Store } from '../store/types.js';
import { accountEffort, type AccountEffort } from './effort.js';

/** The store setting that holds the default tier set through `PUT /api/effort-default` (migration 0016 `settings`). */
export const DEFAULT_TIER_SETTING = 'effort.defaultTier';

/** The account's effort settings and where its default tier comes from (`account`: stored; `config`: FLOTILLA_DEFAULT_EFFORT; null: none). */
export interface StoredAccountEffort extends AccountEffort {
  defaultSource: 'account' | 'config' | null;
}

/** What the store holds of the effort settings: the account tiers (0014) and the default tier setting (0016; a string, else none). */
export interface StoredEffortRows {
  tiers: ReadonlyArray<{ name: string; model: string; level: string }>;
  defaultTier: unknown;
}

/**
 * The store's two reads behind {@link storedAccountEffort} (in parallel: one round trip).
 * @throws Error from the store.
 */
export async function readStoredEffort(store: Pick<Store, 'listEffortTiers' | 'getSetting'>): Promise<StoredEffortRows> {
  const [tiers, defaultTier] = await Promise.all([store.listEffortTiers(), store.getSetting(DEFAULT_TIER_SETTING)]);
  return { tiers, defaultTier };
}

/**
 * The account's effort settings from `rows` (read by {@link readStoredEffort}, maybe cached:
 * effort-cache.ts) laid over those of `env`: a stored tier wins over a FLOTILLA_EFFORT_TIERS tier
 * of the same name; the stored default tier over FLOTILLA_DEFAULT_EFFORT.
 * @throws Error from `accountEffort` (bad FLOTILLA_EFFORT_TIERS).
 */
export function mergeStoredEffort(rows: StoredEffortRows, env: NodeJS.ProcessEnv = process.env): StoredAccountEffort {
  const base = accountEffort(env);
  const tiers = { ...base.tiers };
  for (const t of rows.tiers) tiers[t.name] = { model: t.model, level: t.level };
  if (typeof rows.defaultTier === 'string') return { tiers, defaultTier: rows.defaultTier, defaultSource: 'account' };
  return { tiers, defaultTier: base.defaultTier, defaultSource: base.defaultTier ? 'config' : null };
}

/**
 * The account's effort settings with the tiers stored through `PUT /api/effort-tiers/:name`
 * (store, migration 0014) laid over those of `FLOTILLA_EFFORT_TIERS` (a stored tier wins over
 * an environment tier of the same name), and the default tier stored through
 * `PUT /api/effort-default` (0016) over `FLOTILLA_DEFAULT_EFFORT`. Reads the store every time
 * (the hot paths use the cached copy of effort-cache.ts).
 * @throws Error from `accountEffort` (bad FLOTILLA_EFFORT_TIERS) or from the store.
 */
export async function storedAccountEffort(store: Pick<Store, 'listEffortTiers' | 'getSetting'>, env: NodeJS.ProcessEnv = process.env): Promise<StoredAccountEffort> {
  return mergeStoredEffort(await readStoredEffort(store), env);
}
