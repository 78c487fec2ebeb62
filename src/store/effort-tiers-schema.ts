import type { Int8 } from './schema.js';

/** A tier the account defines (migration 0014). */
export interface EffortTiersTable {
  /** Tier name, `^[a-z][a-z0-9-]{0,63}$`. */
  name: string;
  /** The model the harness is given (`--model`). */
  model: string;
  /** Effort level: `low`, `medium`, `high`, `xhigh` or `max` (core/effort.ts EFFORT_LEVELS). */
  level: string;
  /** Epoch ms, server clock. */
  updated_at: Int8;
}

/** The effort tier table, merged into the store's `Database`. */
export interface EffortTierTables {
  effort_tiers: EffortTiersTable;
}
