import type { Int8 } from './schema.js';

/** Model calls of one job attempt (migration 0010). */
export interface ModelCallActivityTable {
  job_id: number;
  attempt: number;
  /** Calls in flight now (never below 0). */
  in_flight: number;
  /** Epoch ms (server clock) a call last started or ended; bigint on PostgreSQL. */
  last_at: Int8;
}

/** The tables of model-call activity, merged into the store's `Database`. */
export interface ModelActivityTables {
  model_call_activity: ModelCallActivityTable;
}
