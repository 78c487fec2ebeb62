import { SettingError } from '../core/setting-env.js';
import { BUILTIN_EFFORT_TIERS } from '../core/effort.js';
import { treeLimitsFromEnv } from '../core/job-tree.js';
import type { Store } from '../store/types.js';
import { storedAccountEffort } from './effort-stored.js';

/**
 * Checks, at server start, the settings the server otherwise reads only when a request needs
 * them, so a bad value stops `flotilla up` with a message naming the variable instead of
 * failing later requests with 500s (fresh-user report, 2026-11-30):
 * - `FLOTILLA_EFFORT_TIERS` is valid JSON of tiers (server/effort.ts);
 * - `FLOTILLA_DEFAULT_EFFORT` names a built-in, configured or stored tier (a stored default
 *   that names no tier is only reported: the server must start so an admin can change it);
 * - `FLOTILLA_TREE_MAX_DEPTH` / `FLOTILLA_TREE_MAX_JOBS` are integers in range (core/job-tree.ts),
 *   unless the server was given its tree limits (`skipTreeLimits`).
 * @returns warnings to log (empty when all is well).
 * @throws Error naming the variable and what is wrong with it.
 */
export async function checkServerEnv(store: Pick<Store, 'listEffortTiers' | 'getSetting'>, env: NodeJS.ProcessEnv, skipTreeLimits = false): Promise<string[]> {
  const warnings: string[] = [];
  const effort = await storedAccountEffort(store, env);
  const known = [...new Set([...Object.keys(BUILTIN_EFFORT_TIERS), ...Object.keys(effort.tiers)])].sort().join(', ');
  const isTier = (name: string) => Object.hasOwn(BUILTIN_EFFORT_TIERS, name) || Object.hasOwn(effort.tiers, name);
  // Checked even while a stored default hides it: clearing the stored one brings it back.
  const fromEnv = env.FLOTILLA_DEFAULT_EFFORT?.trim();
  if (fromEnv && !isTier(fromEnv)) throw new SettingError(`FLOTILLA_DEFAULT_EFFORT: unknown tier ${JSON.stringify(fromEnv)}; known tiers: ${known}`);
  const d = effort.defaultTier;
  if (d !== null && !isTier(d)) {
    warnings.push(`the stored default effort tier ${JSON.stringify(d)} names no tier (known: ${known}); jobs without a tier are refused until an admin sets another (flotilla tiers default NAME)`);
  }
  if (!skipTreeLimits) treeLimitsFromEnv(env);
  return warnings;
}
