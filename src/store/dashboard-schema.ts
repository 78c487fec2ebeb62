import type { Generated } from 'kysely';
import type { Int8 } from './schema.js';

/** 0016 (issue 8): Kysely table types of the dashboard's history tables (see migrations/0016_dashboard.ts). */
export interface RunnerEventsTable {
  id: Generated<number>;
  runner_id: number;
  /** {@link RunnerEventKind}. */
  kind: string;
  text: string;
  job_id: number | null;
  /** Epoch ms, server clock. */
  at: Int8;
}

export interface TaskTurnsTable {
  task_id: number;
  turn: number;
  job_id: number;
  created_at: Int8;
}

export interface SettingsTable {
  key: string;
  /** JSON text. */
  value: string;
  updated_at: Int8;
}

/** The 0016 tables, merged into the `Database` of schema.ts. */
export interface DashboardTables {
  runner_events: RunnerEventsTable;
  task_turns: TaskTurnsTable;
  settings: SettingsTable;
}
