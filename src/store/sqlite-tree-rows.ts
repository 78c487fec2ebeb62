import type BetterSqlite3 from 'better-sqlite3';

/** A tree's budget row (tree_budgets) as one group transaction sees it; micro-dollars, ms. */
export interface TreeRow {
  readonly rootId: number;
  readonly limitMicros: number;
  spentMicros: number;
  reservedMicros: number;
  /** Room held for resumed jobs' calls (budget-holds.ts): only the store's own transactions change it, never a group's. */
  readonly heldMicros: number;
  updatedAt: number;
  /** Changed in this transaction: written back by {@link TreeRows.flush}. */
  dirty: boolean;
}

/**
 * The tree budget rows the gateway's reserves and settles of ONE group transaction read and
 * change (sqlite-fast.ts, sqlite-group-commit.ts), held in memory for the length of that
 * transaction: once a reserve has read the row (its conditional `update ... returning`, which
 * {@link TreeRows.hold}s what it returns), every later reserve of the transaction checks and adds
 * to it and every later settle moves its figures in memory, and the row is written back once
 * (one UPDATE) before the transaction commits. At 64 concurrent calls a transaction holds ~30
 * reserves and settles of the same tree: about two statements on its row instead of one per call
 * (~2.5 µs a reserve, ~0.9 µs a settle; bench/gateway-store.bench.js); a transaction of one
 * call (1 client) runs the same statements as without this.
 *
 * Why this is the same as one statement per call: the transaction runs its units one after
 * another on the one connection that writes the file while it lasts (SQLite allows one writer;
 * open.ts's lock makes this process the only one, and of its two connections — the store's and
 * the writer thread's, sqlite-writer.ts — only the one holding thread-write-lock.ts writes), so
 * nothing else writes the row between the read and the write, and each unit sees every earlier unit's change exactly as it would have in the
 * row. The check `spent + reserved + held + worst <= limit` is the conditional UPDATE's of
 * store/budgets.ts, made on the same figures; a transaction that fails or is abandoned is
 * rolled back whole, and its in-memory rows with it ({@link TreeRows.reset} at the next one).
 * A unit of the same transaction that reads or writes tree_budgets in SQL must
 * {@link TreeRows.flush} first.
 */
export interface TreeRows {
  /** The row of `rootId` when this transaction holds it already (a reserve of it ran), else undefined. */
  held(rootId: number): TreeRow | undefined;
  /** Holds `row` as this transaction's, as the caller just read or wrote it in SQL (not dirty). */
  hold(row: Omit<TreeRow, 'dirty'>): TreeRow;
  /** Writes every changed row back (one UPDATE each) and forgets them all. @throws SQLite's error (the caller abandons the transaction). */
  flush(): void;
  /** Forgets every row without writing it (a new transaction begins, or the last was rolled back). */
  reset(): void;
}

/** {@link TreeRows} over `sqlite` (after the migrations made tree_budgets). */
export function sqliteTreeRows(sqlite: BetterSqlite3.Database): TreeRows {
  let write: BetterSqlite3.Statement | null = null;
  const rows = new Map<number, TreeRow>();
  return {
    held(rootId) {
      return rows.get(rootId);
    },
    hold(r) {
      const row = { ...r, dirty: false };
      rows.set(r.rootId, row);
      return row;
    },
    flush() {
      if (rows.size === 0) return;
      write ??= sqlite.prepare('update tree_budgets set spent_micros = ?, reserved_micros = ?, updated_at = ? where root_id = ?');
      for (const row of rows.values()) if (row.dirty) write.run(row.spentMicros, row.reservedMicros, row.updatedAt, row.rootId);
      rows.clear();
    },
    reset() {
      rows.clear();
    },
  };
}
