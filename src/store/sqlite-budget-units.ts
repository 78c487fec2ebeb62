import type BetterSqlite3 from 'better-sqlite3';
import { modelCallValues } from './model-calls.js';
import { parseJobIds } from './job-budgets.js';
import type { TreeRow, TreeRows } from './sqlite-tree-rows.js';
import type { BudgetReservationResult, NewModelCall } from './types.js';
import type { SettleFound } from './budgets.js';
import { budgetFigures } from './budget-figures.js';
import type { WriterUnit } from './sqlite-writer-wire.js';

/**
 * The gateway's two per-call writes on SQLite, as units of a group transaction
 * (sqlite-group-commit.ts): the budget check and reservation, and the settle with its ledger
 * row. The writes of store/budgets.ts, prepared once, on the connection that runs them: the
 * store's own (sqlite-fast.ts) or the writer thread's (sqlite-writer-worker.ts). Micro-dollars,
 * ms.
 */
export interface BudgetUnits {
  /**
   * Reserves `worst` µ$ on tree `rootId` when `spent + reserved + held + worst <= limit` (held:
   * the room held for resumed jobs' calls, budget-holds.ts; a holder's own calls go to
   * budgets.ts, sqlite-fast.ts); `callJson`
   * (pending-call.ts) is what the sweep records if the call is never settled.
   * @returns the reservation, or null when the call does not fit or the tree has no budget row
   *   (the caller then runs store/budgets.ts, which says which).
   * @throws SQLite's error; a failure after the unit's first write abandons the group transaction.
   */
  reserve(rootId: number, worst: number, now: number, ttlMs: number, callJson: string | null): BudgetReservationResult | null;
  /**
   * Settles reservation `reservationId` of tree `rootId` at `cost` µ$ and writes the ledger row
   * `row` ({@link ledgerArgs}), when given.
   * @returns 'held' (it was open), 'swept' (the sweep had charged it: its charge and ledger row
   *   are replaced) or 'gone' (no such reservation: nothing of the tree moved).
   * @throws as {@link BudgetUnits.reserve}.
   */
  settle(rootId: number, reservationId: number, cost: number, now: number, row: LedgerArgs | null): SettleFound;
}

/**
 * A ledger row's values (model-calls.ts modelCallValues) in {@link LEDGER_COLS} order: how a
 * settle carries its row, to the positional insert and across the writer thread's boundary
 * (an array of 19 values is structured-cloned without its 19 key strings: sqlite-writer-wire.ts).
 */
export type LedgerArgs = unknown[];

/** Only its keys are used: the ledger's columns, as model-calls.ts writes them. */
const SAMPLE_CALL: NewModelCall = {
  jobId: 1,
  attempt: 0,
  provider: 'x',
  model: 'x',
  api: 'x',
  streamed: false,
  httpStatus: 0,
  inputTokens: 0,
  outputTokens: 0,
  cacheReadTokens: 0,
  cacheWriteTokens: 0,
  usageKnown: true,
  costMicros: 0,
  startedAt: 0,
  durationMs: 0,
};

/** The ledger's columns, in the order of {@link LedgerArgs}: those model-calls.ts modelCallValues writes, in its order. */
export const LEDGER_COLS: readonly string[] = Object.keys(modelCallValues(SAMPLE_CALL));

/**
 * Call `call`'s ledger row as {@link LedgerArgs}.
 * @throws model-calls.ts modelCallValues's validation errors (a count that is not a whole number ≥ 0).
 */
export function ledgerArgs(call: NewModelCall): LedgerArgs {
  const v = modelCallValues(call);
  // a literal, not LEDGER_COLS.map((c) => v[c]): 19 keyed loads of varying keys are megamorphic
  // (~2.5k instructions a call, callgrind); sqlite-writer-wire.test.ts checks the order
  return [v.job_id, v.attempt, v.provider, v.model, v.api, v.streamed, v.http_status, v.input_tokens, v.output_tokens, v.cache_read_tokens, v.cache_write_tokens, v.usage_known, v.cost_micros, v.cost_nanos, v.runner_id, v.refused, v.started_at, v.duration_ms, v.web_search_requests];
}

/** Runs `u` (a reserve or a settle, as sent to the writer thread) with `units`: what its method returns or throws. */
export function runBudgetUnit(units: BudgetUnits, u: WriterUnit): BudgetReservationResult | null | SettleFound {
  return u.kind === 'reserve' ? units.reserve(u.rootId, u.worst, u.now, u.ttlMs, u.callJson) : units.settle(u.rootId, u.reservationId, u.cost, u.now, u.row);
}

/** {@link BudgetUnits} on `sqlite` (after the migrations made the tables); `trees` holds the tree rows of the running group transaction. */
export function sqliteBudgetUnits(sqlite: BetterSqlite3.Database, trees: TreeRows): BudgetUnits {
  let stmts: ReturnType<typeof prepare> | null = null;
  const s = () => (stmts ??= prepare(sqlite));
  // A reserve or settle is one unit of the group transaction WITHOUT a savepoint of its own
  // (SAVEPOINT + RELEASE were ~5 µs of the ~25 µs of SQLite work per call; measured with
  // better-sqlite3 on the real schema). Each unit stays atomic all the same: its first write is
  // the only statement that can fail on its own (a constraint, e.g. the ledger row's job_id; a
  // failed statement leaves nothing behind), and it fails alone, as with a savepoint. A later
  // statement can only fail on what SQLite reports for a whole transaction (disk full, I/O
  // error, out of memory): then the unit's earlier writes cannot be taken back alone, so the
  // whole group transaction is rolled back and every caller of the batch gets the error
  // (sqlite-group-commit.ts: nothing of the batch is kept). Never a half-applied reserve or settle.
  const abandonGroup = (err: unknown): never => {
    if (sqlite.inTransaction) sqlite.exec('ROLLBACK');
    throw err;
  };
  // The check and the reservation: store/budgets.ts's conditional UPDATE. The first reserve of a
  // tree in a group transaction runs it and holds the row it returns (sqlite-tree-rows.ts); the
  // later ones make it in memory on that row, and their reservation row is their only write in
  // SQL: when it is refused, nothing of the reserve happened.
  const reserve = (rootId: number, worst: number, now: number, ttlMs: number, callJson: string | null): BudgetReservationResult | null => {
    let row = trees.held(rootId);
    if (row === undefined) {
      const r = s().reserve.get(worst, now, rootId, worst) as BudgetRow | undefined;
      if (!r) return null;
      row = trees.hold({ rootId, limitMicros: Number(r.limit_micros), spentMicros: Number(r.spent_micros), reservedMicros: Number(r.reserved_micros), heldMicros: Number(r.held_micros), updatedAt: now });
      let res: BetterSqlite3.RunResult;
      try {
        res = s().insertReservation.run(rootId, worst, now, now + ttlMs, callJson);
      } catch (err) {
        return abandonGroup(err);
      }
      return { ok: true, budget: budgetOf(row), reservationId: Number(res.lastInsertRowid) };
    }
    if (row.spentMicros + row.reservedMicros + row.heldMicros + worst > row.limitMicros) return null;
    const res = s().insertReservation.run(rootId, worst, now, now + ttlMs, callJson);
    row.reservedMicros += worst;
    row.updatedAt = now;
    row.dirty = true;
    return { ok: true, budget: budgetOf(row), reservationId: Number(res.lastInsertRowid) };
  };
  const settle = (rootId: number, reservationId: number, cost: number, now: number, row: LedgerArgs | null): SettleFound => {
    // The ledger row first: when it is refused (a constraint), nothing of the settle was written
    // and the caller settles without it (meter.ts). Same rows as budgets.ts, another order.
    if (row) s().insertCall.run(row);
    let held: { micros: number; job_ids: string | null; charged_micros: number | null; call_id: number | null } | undefined;
    try {
      held = s().deleteReservation.get(reservationId, rootId) as typeof held;
    } catch (err) {
      if (!row) throw err; // the unit's first write: nothing to take back
      return abandonGroup(err);
    }
    // H7: a reservation the sweep charged as unknown usage: its charge and ledger row are replaced
    const swept = held && held.charged_micros !== null ? Number(held.charged_micros) : null;
    try {
      const micros = held && swept === null ? Number(held.micros) : 0;
      const delta = cost - (swept ?? 0);
      // store/budgets.ts's settle UPDATE, in memory on the row this transaction holds
      // (sqlite-tree-rows.ts), else in SQL; the change to spent may be negative (a late settle
      // of a swept reservation, H7): never below 0
      const row = trees.held(rootId);
      if (row === undefined) s().settle.run(micros, micros, delta, now, rootId);
      else {
        row.reservedMicros = row.reservedMicros >= micros ? row.reservedMicros - micros : 0;
        row.spentMicros = Math.max(row.spentMicros + delta, 0);
        row.updatedAt = now;
        row.dirty = true;
      }
      // issue 6: the child sub-limits the reservation also held (job-budgets.ts), ascending id
      for (const j of parseJobIds(held?.job_ids).sort((a, b) => a - b)) s().settleJob.run(micros, micros, delta, now, j);
      if (held && held.call_id !== null) s().deleteCall.run(held.call_id);
    } catch (err) {
      return abandonGroup(err);
    }
    return held === undefined ? 'gone' : swept === null ? 'held' : 'swept';
  };

  return { reserve, settle };
}

type BudgetRow = { limit_micros: number; spent_micros: number; reserved_micros: number; held_micros: number };

/** A tree's figures as a reservation result gives them (µ$). */
function budgetOf(row: TreeRow) {
  return budgetFigures(row.rootId, undefined, row.limitMicros, row.spentMicros, row.reservedMicros, row.heldMicros);
}

/** The prepared statements (after the migrations made the tables). */
function prepare(sqlite: BetterSqlite3.Database) {
  return {
    reserve: sqlite.prepare(
      'update tree_budgets set reserved_micros = reserved_micros + ?, updated_at = ? where root_id = ? and spent_micros + reserved_micros + held_micros + ? <= limit_micros returning limit_micros, spent_micros, reserved_micros, held_micros',
    ),
    // the change to spent may be negative (a late settle of a swept reservation, H7): never below 0
    settle: sqlite.prepare(
      'update tree_budgets set reserved_micros = case when reserved_micros >= ? then reserved_micros - ? else 0 end, spent_micros = max(spent_micros + ?, 0), updated_at = ? where root_id = ?',
    ),
    insertReservation: sqlite.prepare('insert into budget_reservations (root_id, micros, created_at, expires_at, call) values (?, ?, ?, ?, ?)'),
    deleteReservation: sqlite.prepare('delete from budget_reservations where id = ? and root_id = ? returning micros, job_ids, charged_micros, call_id'),
    // the change to spent may be negative (a late settle of a swept reservation, H7): never below 0
    settleJob: sqlite.prepare(
      'update job_budgets set reserved_micros = case when reserved_micros >= ? then reserved_micros - ? else 0 end, spent_micros = max(spent_micros + ?, 0), updated_at = ? where job_id = ?',
    ),
    /** Deletes the ledger row the sweep wrote for a reservation settled late after all (H7). */
    deleteCall: sqlite.prepare('delete from model_calls where id = ?'),
    /**
     * Writes one ledger row, its {@link LedgerArgs} bound by position (an array binds as
     * anonymous parameters): ~3 µs a row less than binding 19 named ones from an object
     * (better-sqlite3, measured).
     */
    insertCall: sqlite.prepare(`insert into model_calls (${LEDGER_COLS.join(', ')}) values (${LEDGER_COLS.map(() => '?').join(', ')})`),
  };
}
