import { SettingError } from '../core/setting-env.js';
import { z } from 'zod';
import { EFFORT_LEVELS, resolveEffortTier, type EffortTier } from '../core/effort.js';
import { HarnessModel, type AgentDefinition } from '../protocol/index.js';
import { findRepeatedKey } from '../core/json-keys.js';

/** An account's own tiers: `{"name": {"model": "...", "level": "high"}}`. */
const AccountTiers = z.record(z.string().regex(/^[a-z][a-z0-9-]{0,63}$/), z.object({ model: HarnessModel, level: z.enum(EFFORT_LEVELS) }).strict());

/** The account's effort settings: its own tiers and its default tier. */
export interface AccountEffort {
  tiers: Record<string, EffortTier>;
  defaultTier: string | null;
}

/**
 * Reads the account's effort settings from the environment of the server:
 * `FLOTILLA_EFFORT_TIERS` (JSON, e.g. `{"cheap":{"model":"claude-haiku-4-5","level":"low"}}`)
 * and `FLOTILLA_DEFAULT_EFFORT` (the default tier name).
 * @throws Error naming the variable and the field when FLOTILLA_EFFORT_TIERS is not valid (a
 *   field given twice included; a tier's model must be a {@link HarnessModel}).
 */
export function accountEffort(env: NodeJS.ProcessEnv = process.env): AccountEffort {
  let tiers: Record<string, EffortTier> = {};
  const raw = env.FLOTILLA_EFFORT_TIERS;
  if (raw && raw.trim() !== '') {
    let json: unknown;
    try {
      json = JSON.parse(raw);
    } catch (err) {
      throw new SettingError(`FLOTILLA_EFFORT_TIERS: not JSON: ${(err as Error).message}`);
    }
    // a tier given twice would be read as the last, without a word
    const twice = findRepeatedKey(raw);
    if (twice !== null) throw new SettingError(`FLOTILLA_EFFORT_TIERS: field ${twice}: given twice; give each once`);
    const r = AccountTiers.safeParse(json);
    if (!r.success) {
      const i = r.error.issues[0];
      throw new SettingError(`FLOTILLA_EFFORT_TIERS: field ${i?.path.join('.') || '(root)'}: ${i?.message ?? 'invalid'}`);
    }
    tiers = r.data;
  }
  const d = env.FLOTILLA_DEFAULT_EFFORT?.trim();
  return { tiers, defaultTier: d ? d : null };
}

/**
 * The model and effort level a job runs with: run tier > agent tier > account default
 * (core/effort.ts); null when none is set.
 * @throws Error `effort: unknown tier ...` when a named tier does not exist.
 */
export function jobEffort(runTier: string | null | undefined, agent: AgentDefinition, account: AccountEffort = accountEffort()): ({ tier: string } & EffortTier) | null {
  return resolveEffortTier({ run: runTier ?? null, agent: agent.effort ?? null, accountDefault: account.defaultTier }, account.tiers);
}
