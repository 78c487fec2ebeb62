/** A stored account tier (migration 0014). `updatedAt`: epoch ms, server clock. */
export interface EffortTierRow {
  name: string;
  model: string;
  /** `low`, `medium`, `high`, `xhigh` or `max`. */
  level: string;
  updatedAt: number;
}

/** The store methods for the account's effort tiers (store/effort-tiers.ts). */
export interface EffortTierStore {
  /** Every stored tier, name ascending. */
  listEffortTiers(): Promise<EffortTierRow[]>;
  /**
   * Creates or replaces tier `name` (one statement: the old row or the new, never half).
   * @throws Error naming the field when `name` (`^[a-z][a-z0-9-]{0,63}$`), `model` (1–200
   *   characters), `level` (core/effort.ts EFFORT_LEVELS) or `now` is malformed; nothing is stored then.
   */
  setEffortTier(name: string, model: string, level: string, now: number): Promise<EffortTierRow>;
  /** Deletes tier `name`; false when there was none. */
  deleteEffortTier(name: string): Promise<boolean>;
}
