import type { ColumnType, Generated } from 'kysely';
import type { Int8, Json } from './schema.js';

/** 0006 (issue 7): Kysely table types of tasks, receivers and their events (see migrations/0006_tasks.ts). */
export interface TasksTable {
  id: Generated<number>;
  agent: string;
  title: string;
  input: Json;
  status: string;
  coalesce_ms: Int8;
  current_job_id: number | null;
  workspace_job_id: number | null;
  runner_id: number | null;
  session_id: string | null;
  turn: ColumnType<number, number | undefined, number>;
  window_until: Int8 | null;
  trailing_due_at: Int8 | null;
  last_event_at: Int8 | null;
  /** 0012: epoch ms until which the task keeps its runner slot after a turn (idle timeout), or null. */
  slot_until: ColumnType<number | string | null, number | null | undefined, number | null>;
  error: string | null;
  created_at: Int8;
  updated_at: Int8;
  /** 0017: events of the task no turn has taken yet (task_events with turn null), kept by every statement that adds, takes or puts back one. */
  pending_events: ColumnType<number, number | undefined, number>;
  /** 0026: the budget of the task's turns together, µ$, or null (each turn its agent's default). */
  budget_micros: ColumnType<number | string | null, number | null | undefined, number | null>;
}

export interface TaskKeysTable {
  task_id: number;
  key: string;
  /** 1 while the task is not completed (unique per key among active rows). */
  active: number;
}

export interface TaskPromptsTable {
  id: Generated<number>;
  task_id: number;
  text: string;
  turn: number | null;
  created_at: Int8;
}

export interface ReceiversTable {
  id: Generated<number>;
  name: string;
  provider: string;
  auth: string;
  secret: string | null;
  token_hash: string | null;
  key_expr: string | null;
  summary_expr: string | null;
  fallback_task_id: number | null;
  policies: Json;
  created_at: Int8;
}

export interface DeliveriesTable {
  id: Generated<number>;
  receiver_id: number;
  delivery_id: string;
  received_at: Int8;
  /** 0015: the task the delivery's event went to (null: unmatched, or stored before 0015); what a repeat answers. */
  task_id: ColumnType<number | null, number | null | undefined, number | null>;
}

export interface TaskEventsTable {
  id: Generated<number>;
  task_id: number | null;
  receiver_id: number | null;
  key: string | null;
  kind: string;
  actor: string | null;
  summary: string;
  occurred_at: Int8;
  received_at: Int8;
  turn: number | null;
}

/** The 0006 tables, merged into the `Database` of schema.ts. */
export interface TaskTables {
  tasks: TasksTable;
  task_keys: TaskKeysTable;
  task_prompts: TaskPromptsTable;
  receivers: ReceiversTable;
  deliveries: DeliveriesTable;
  task_events: TaskEventsTable;
}
