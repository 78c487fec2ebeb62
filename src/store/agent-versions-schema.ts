import type { Generated } from 'kysely';
import type { Int8 } from './schema.js';

/** One installed version of an agent (migration 0011). */
export interface AgentVersionsTable {
  id: Generated<Int8>;
  name: string;
  /** 1, 2, ... per agent name. */
  seq: number;
  /** `v<seq>-<commit prefix>`; what a job's `agent_version` holds. */
  version: string;
  source: string;
  ref: string | null;
  /** Git commit, or `sha256:<hex>` for a plain folder. */
  commit: string;
  /** AgentDefinition (prompt inlined), JSON text on both engines. */
  definition: string;
  script: string | null;
  /** Epoch ms, server clock. */
  installed_at: Int8;
}

/** The tables of installed agents, merged into the store's `Database`. */
export interface AgentVersionTables {
  agent_versions: AgentVersionsTable;
}
