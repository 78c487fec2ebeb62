// The messages between a SQLite store's event loop and its writer thread (sqlite-writer.ts,
// sqlite-writer-worker.ts). They cross the thread boundary by structured clone, which writes
// and reads every key of an object as a string: the units and outcomes, two or so per model
// call, go as arrays of numbers and strings instead ({@link PackedUnit}, {@link PackedOutcome}),
// ~5 % of the event loop's instructions per call less at 64 concurrent clients (callgrind,
// bench/gateway.bench.js's load; 2026-12-08).
import type { BudgetReservationResult } from './types.js';
import type { SettleFound } from './budgets.js';
import { budgetFigures } from './budget-figures.js';
import type { LedgerArgs } from './sqlite-budget-units.js';

/** The writer thread's `workerData`: the database file, the write lock's memory (thread-write-lock.ts), the doorbell's ({@link RING}), how long it waits for the lock or a busy file, ms. */
export interface WriterSetup {
  file: string;
  lock: SharedArrayBuffer;
  doorbell: SharedArrayBuffer;
  busyTimeoutMs: number;
}

/** One unit: the arguments of sqlite-budget-units.ts reserve or settle (µ$, ms; `row`: the ledger row, sqlite-budget-units.ts LedgerArgs). */
export type WriterUnit =
  | { kind: 'reserve'; rootId: number; worst: number; now: number; ttlMs: number; callJson: string | null }
  | { kind: 'settle'; rootId: number; reservationId: number; cost: number; now: number; row: LedgerArgs | null };

/** A {@link WriterUnit} as it crosses: `[0, rootId, worst, now, ttlMs, callJson]` or `[1, rootId, reservationId, cost, now, row]`. */
export type PackedUnit = [0, number, number, number, number, string | null] | [1, number, number, number, number, LedgerArgs | null];

/** `u` as a {@link PackedUnit}. */
export function packUnit(u: WriterUnit): PackedUnit {
  return u.kind === 'reserve' ? [0, u.rootId, u.worst, u.now, u.ttlMs, u.callJson] : [1, u.rootId, u.reservationId, u.cost, u.now, u.row];
}

/** The {@link WriterUnit} of `p`. */
export function unpackUnit(p: PackedUnit): WriterUnit {
  return p[0] === 0
    ? { kind: 'reserve', rootId: p[1], worst: p[2], now: p[3], ttlMs: p[4], callJson: p[5] }
    : { kind: 'settle', rootId: p[1], reservationId: p[2], cost: p[3], now: p[4], row: p[5] };
}

/** Event loop → thread: the units to run in one transaction, in order. The string `'close'` closes the connection and ends the thread. */
export interface WriterBatch {
  id: number;
  units: PackedUnit[];
}

/** An error as it crosses the boundary (SQLite's `code`, e.g. SQLITE_CONSTRAINT_FOREIGNKEY, kept). */
export interface WriterError {
  message: string;
  name: string;
  code?: string;
}

/** One unit's outcome: what its function returned, or the error it threw (that unit only). */
export type WriterOutcome = { ok: true; value: BudgetReservationResult | null | SettleFound } | { ok: false; error: WriterError };

/**
 * A {@link WriterOutcome} as it crosses: a reservation of a tree's budget (sqlite-budget-units.ts
 * reserve: no `jobId`) as `[reservationId, rootId, limitMicros, spentMicros, reservedMicros,
 * heldMicros]`; null, a {@link SettleFound} or any other value as it is; an error as `{ error }`.
 */
export type PackedOutcome = number[] | null | SettleFound | { error: WriterError } | Exclude<BudgetReservationResult, unknown[]>;

/** `o` as a {@link PackedOutcome}. */
export function packOutcome(o: WriterOutcome): PackedOutcome {
  if (!o.ok) return { error: o.error };
  const v = o.value;
  if (v !== null && typeof v === 'object' && v.ok && v.budget.jobId === undefined) {
    const b = v.budget;
    return [v.reservationId, b.rootId, b.limitMicros, b.spentMicros, b.reservedMicros, b.heldMicros ?? 0];
  }
  return v;
}

/** The {@link WriterOutcome} of `p`. */
export function unpackOutcome(p: PackedOutcome): WriterOutcome {
  if (Array.isArray(p)) return { ok: true, value: { ok: true, reservationId: p[0]!, budget: budgetFigures(p[1]!, undefined, p[2]!, p[3]!, p[4]!, p[5]!) } };
  if (p !== null && typeof p === 'object' && 'error' in p) return { ok: false, error: p.error };
  return { ok: true, value: p };
}

/** Thread → event loop, once per batch: each unit's outcome, or one error for the whole batch (nothing of it was kept). The string `'ready'` once the connection is open. */
export type WriterReply = { id: number; outcomes: PackedOutcome[] } | { id: number; error: WriterError };

/**
 * The doorbell, an Int32Array over `WriterSetup.doorbell`: [SLEEPING] is 1 while the thread
 * waits for a batch; [RING] counts the event loop's rings (a batch or 'close' sent). The event
 * loop wakes the thread (Atomics.notify on RING) only when it sleeps.
 */
export const SLEEPING = 0;
export const RING = 1;
