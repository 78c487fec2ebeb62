// The messages between a SQLite store's event loop and its writer thread (sqlite-writer.ts,
// sqlite-writer-worker.ts). Plain objects: they cross the thread boundary by structured clone.
import type { BudgetReservationResult } from './types.js';
import type { SettleFound } from './budgets.js';

/** The writer thread's `workerData`: the database file, the write lock's memory (thread-write-lock.ts), the doorbell's ({@link RING}), how long it waits for the lock or a busy file, ms. */
export interface WriterSetup {
  file: string;
  lock: SharedArrayBuffer;
  doorbell: SharedArrayBuffer;
  busyTimeoutMs: number;
}

/** One unit: the arguments of sqlite-budget-units.ts reserve or settle (µ$, ms). */
export type WriterUnit =
  | { kind: 'reserve'; rootId: number; worst: number; now: number; ttlMs: number; callJson: string | null }
  | { kind: 'settle'; rootId: number; reservationId: number; cost: number; now: number; values: Record<string, unknown> | null };

/** Event loop → thread: the units to run in one transaction, in order. The string `'close'` closes the connection and ends the thread. */
export interface WriterBatch {
  id: number;
  units: WriterUnit[];
}

/** An error as it crosses the boundary (SQLite's `code`, e.g. SQLITE_CONSTRAINT_FOREIGNKEY, kept). */
export interface WriterError {
  message: string;
  name: string;
  code?: string;
}

/** One unit's outcome: what its function returned, or the error it threw (that unit only). */
export type WriterOutcome = { ok: true; value: BudgetReservationResult | null | SettleFound } | { ok: false; error: WriterError };

/** Thread → event loop, once per batch: each unit's outcome, or one error for the whole batch (nothing of it was kept). The string `'ready'` once the connection is open. */
export type WriterReply = { id: number; outcomes: WriterOutcome[] } | { id: number; error: WriterError };

/**
 * The doorbell, an Int32Array over `WriterSetup.doorbell`: [SLEEPING] is 1 while the thread
 * waits for a batch; [RING] counts the event loop's rings (a batch or 'close' sent). The event
 * loop wakes the thread (Atomics.notify on RING) only when it sleeps.
 */
export const SLEEPING = 0;
export const RING = 1;
