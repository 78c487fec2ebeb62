/**
 * Effort tiers (DESIGN.md words: "a named preset (model + effort level) picked by run > step >
 * playbook > agent > account default"; issue 4 item 7). Pure rules, no I/O.
 */

/** A tier: the model the harness is given (`--model`) and its effort level (`--effort`). */
export interface EffortTier {
  model: string;
  /** `low`, `medium`, `high`, `xhigh` or `max` (Claude Code 2.1's `--effort` levels). */
  level: string;
}

/** Effort levels a tier may name (Claude Code 2.1.197 `--effort`; Codex maps them, see harness). */
export const EFFORT_LEVELS = ['low', 'medium', 'high', 'xhigh', 'max'] as const;

/** The tiers every account has. An account may add its own or redefine these. */
export const BUILTIN_EFFORT_TIERS: Readonly<Record<string, EffortTier>> = {
  max: { model: 'claude-opus-4-6', level: 'max' },
  high: { model: 'claude-sonnet-4-5', level: 'high' },
  medium: { model: 'claude-sonnet-4-5', level: 'medium' },
};

/** Where a tier name may come from, most specific first (undefined/null = not set there). */
export interface EffortPick {
  run?: string | null;
  step?: string | null;
  playbook?: string | null;
  agent?: string | null;
  accountDefault?: string | null;
}

/**
 * The tier that applies: the first name set in run > step > playbook > agent > account
 * default, looked up in the account's tiers, then the built-in ones. Null when no level names
 * a tier (the harness keeps the agent's model and its own default effort).
 * @throws Error `effort: unknown tier "x" (known: max, high, medium, ...)` naming where it came from.
 */
export function resolveEffortTier(pick: EffortPick, accountTiers: Readonly<Record<string, EffortTier>> = {}): ({ tier: string } & EffortTier) | null {
  const order: Array<keyof EffortPick> = ['run', 'step', 'playbook', 'agent', 'accountDefault'];
  for (const where of order) {
    const name = pick[where];
    if (name === undefined || name === null || name === '') continue;
    // own keys only: `toString` is no tier
    const t = Object.hasOwn(accountTiers, name) ? accountTiers[name] : Object.hasOwn(BUILTIN_EFFORT_TIERS, name) ? BUILTIN_EFFORT_TIERS[name] : undefined;
    if (!t) {
      const known = [...new Set([...Object.keys(accountTiers), ...Object.keys(BUILTIN_EFFORT_TIERS)])].join(', ');
      throw new Error(`effort: unknown tier ${JSON.stringify(name)} (from the ${where === 'accountDefault' ? 'account default' : where}; known: ${known})`);
    }
    return { tier: name, model: t.model, level: t.level };
  }
  return null;
}
