import { CompiledQuery, type QueryResult } from 'kysely';
import { num } from './codec.js';
import type { TaskSelect } from './tasks.js';

/**
 * The statements of the batch ingest (ingest-batch.ts), one implementation per engine, as raw
 * SQL (no query building per delivery: issue 7 throughput): ingest-sql-pg.ts, where each step
 * is ONE statement for the whole batch (arrays bound as parameters, `unnest`), so a batch
 * costs the same few round trips whatever its size; ingest-sql-sqlite.ts (in-process, no
 * round trips), where each row is its own prepared statement (the driver's statement cache
 * keeps them prepared).
 */
export interface IngestSql {
  /**
   * Locks (PostgreSQL `FOR UPDATE`, in id order, so concurrent batches cannot deadlock on
   * tasks) and reads the tasks owning one of `keys`: actively, or for a key with `past` also
   * while inactive (completed). Each with its active keys and which of the given keys it owns
   * ({@link IngestTask}). The rows carry no counts yet (see {@link IngestSql.insertDeliveries}).
   */
  lockOwners(trx: Trx, keys: { key: string; past: boolean }[]): Promise<IngestTask[]>;
  /** Locks and reads the tasks `ids` (those that exist), as {@link IngestSql.lockOwners}; they own none of the batch's keys. */
  lockTasks(trx: Trx, ids: number[]): Promise<IngestTask[]>;
  /**
   * Inserts the deliveries, skipping those already stored (unique receiver + delivery id);
   * returns the {@link pairKey}s inserted, and the pending-prompt counts of tasks `countIds`
   * (read in this later statement, so they include what transactions that held the task locks
   * before us committed; prompts are not locked by the task row). Pending events need no count:
   * the locked row carries them (`pending_events`, 0017).
   */
  insertDeliveries(trx: Trx, rows: DeliveryValues[], countIds: number[]): Promise<{ inserted: Set<string>; counts: Map<number, TaskCounts> }>;
  /** The stored task id of each delivery (by {@link pairKey}; null: none recorded). */
  storedTaskIds(trx: Trx, pairs: { receiverId: number; deliveryId: string }[]): Promise<Map<string, number | null>>;
  /**
   * Writes the coalescing columns of each task (final values of the batch), adds its
   * `addEvents` to its stored `pending_events`, and inserts the events in the order given;
   * returns their ids in that order. `tasks` holds every task that gets an event or whose
   * columns change.
   */
  write(trx: Trx, tasks: TaskWindowValues[], events: EventValues[]): Promise<number[]>;
}

/** Pending prompts of a task (not yet taken by a turn). */
export interface TaskCounts {
  queuedPrompts: number;
}

/**
 * The transaction every statement runs in: a Kysely transaction, or on PostgreSQL the pipelined
 * one of ingest-pg-pipeline.ts (which sends BEGIN with the first statement). Only
 * `executeQuery` is used.
 */
export interface Trx {
  executeQuery<R>(query: CompiledQuery<R>): Promise<QueryResult<R>>;
}

/**
 * A task as read for a batch: its row (tasks columns, `pending_events` the stored counter as
 * read under the task's lock; `queued_prompts` filled in later) and its active keys as stored (sorted). `owns` / `owned` are the caller's own key
 * strings (matched by the database, reported back by position, not by the stored text): a key
 * the driver re-encodes (a lone UTF-16 surrogate) still maps to its task.
 */
export interface IngestTask {
  row: TaskSelect;
  keys: string[];
  /** The given `keys` it owns actively. */
  owns: string[];
  /** The given `pastKeys` it owned while inactive (completed). */
  owned: string[];
}

/**
 * Groups lockOwners rows (one per task and key it matched: `pos` the key's index in `keys`,
 * `active` 1/0) into tasks, in id order; `activeKeys(row)` parses the driver's list of the
 * task's active keys.
 */
export function groupOwners(rows: OwnerRow[], keys: readonly { key: string }[], activeKeys: (r: OwnerRow) => string[]): IngestTask[] {
  const byId = new Map<number, IngestTask>();
  for (const r of rows) {
    const id = num(r.id);
    let t = byId.get(id);
    if (!t) byId.set(id, (t = { row: r, keys: activeKeys(r), owns: [], owned: [] }));
    if (r.pos === null || r.pos === undefined) continue;
    const key = keys[num(r.pos)]!.key;
    (num(r.active) === 1 ? t.owns : t.owned).push(key);
  }
  return [...byId.values()].sort((a, b) => num(a.row.id) - num(b.row.id));
}

/** One `deliveries` row. Times epoch ms. */
export interface DeliveryValues {
  receiverId: number;
  deliveryId: string;
  receivedAt: number;
  taskId: number | null;
}

/** The coalescing columns of one task, epoch ms, and how many pending events the batch adds to it. */
export interface TaskWindowValues {
  id: number;
  lastEventAt: number | null;
  windowUntil: number | null;
  trailingDueAt: number | null;
  updatedAt: number;
  /** Events of this batch that go to the task (added to `pending_events`); 0 when only its columns change. */
  addEvents: number;
}

/** One `task_events` row (turn null: pending), as eventValues() of tasks-turns.ts makes it. */
export interface EventValues {
  task_id: number | null;
  receiver_id: number | null;
  key: string | null;
  kind: string;
  actor: string | null;
  summary: string;
  occurred_at: number;
  received_at: number;
}

/** The identity of a delivery within the store: receiver id and delivery id. */
export function pairKey(receiverId: number, deliveryId: string): string {
  return `${receiverId}\n${deliveryId}`;
}

/** Runs raw SQL with `params` in `trx` (no query building). */
export function run<R>(trx: Trx, text: string, params: readonly unknown[]): Promise<{ rows: R[]; numAffectedRows?: bigint; insertId?: bigint }> {
  return trx.executeQuery(CompiledQuery.raw(text, [...params])) as Promise<{ rows: R[]; numAffectedRows?: bigint; insertId?: bigint }>;
}

/** A row of lockOwners / lockTasks: the task's columns, its active keys (an array on PostgreSQL, JSON text on SQLite), and the given key it matched (`pos`, `active`; null for lockTasks). */
export type OwnerRow = TaskSelect & { active_keys: unknown; pos?: unknown; active?: unknown };
/** A task's pending prompt count as the driver returned it. */
export type CountRow = { id: unknown; queued_prompts: unknown };

/** Count rows → task id → counts. */
export function countsOf(rows: CountRow[]): Map<number, TaskCounts> {
  return new Map(rows.map((r) => [num(r.id), { queuedPrompts: num(r.queued_prompts) }]));
}
