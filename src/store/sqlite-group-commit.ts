import type BetterSqlite3 from 'better-sqlite3';
import type { MainWriteLock } from './thread-write-lock.js';

/**
 * Group commit for the gateway's per-call writes on SQLite (issue 3 speed goals: at 64 clients
 * the store's commits were the limit, see bench/gateway-cpu.bench.js). Work handed to
 * {@link GroupCommit.run} during one turn of the event loop is run, in arrival order, inside
 * ONE better-sqlite3 transaction at the next `setImmediate`; every caller's promise settles
 * once that transaction has committed. One commit (one WAL append of the pages the calls
 * share: the tree's budget row, the ledger's last page) per batch instead of one per write.
 *
 * Each unit of work must be atomic on its own: a single statement, a `sqlite.transaction()`
 * function (which runs as a SAVEPOINT inside the group), or statements ordered so that only the
 * first can fail alone and a later failure rolls the whole group back (`ROLLBACK`: the gateway's
 * reserve and settle, sqlite-fast.ts, ~5 µs less than a savepoint). A unit that throws is rolled
 * back alone and its caller gets the error; the others still commit. If the group transaction
 * was abandoned (by SQLite: disk full, I/O error; or by such a unit), every caller of the batch
 * gets that error and nothing of the batch is kept.
 *
 * Ordering and isolation are those of running the units one after another: a budget
 * reservation's conditional UPDATE still sees every earlier unit's effect, so the invariant of
 * store/budgets.ts (spent + reserved <= limit) holds exactly as with one transaction per call.
 *
 * The connection is shared with Kysely, whose SQLite driver holds it (a mutex) for the length
 * of a transaction, across awaits. A group never runs inside someone else's open transaction
 * (its writes would commit or roll back with it): when `sqlite.inTransaction` is true at flush
 * time, the batch waits for `exclusive` (Kysely's connection) and later batches queue behind
 * it, so the order of units is kept.
 */
export interface GroupCommit {
  /**
   * Queues `work` for the next group transaction.
   * @returns its result once the transaction committed.
   * @throws (rejects with) the error `work` threw, or the transaction's error.
   */
  run<T>(work: () => T): Promise<T>;
  /** Commits whatever is queued now (used before the store closes). */
  drain(): Promise<void>;
}

type Item = { work: () => unknown; resolve: (v: unknown) => void; reject: (e: unknown) => void };
/** A unit's outcome in a group transaction: what it returned, or what it threw. */
export type Outcome = { ok: true; value: unknown } | { ok: false; error: unknown };

/**
 * What runs inside each group transaction around its units (sqlite-tree-rows.ts: the tree
 * budget rows held in memory for one transaction).
 */
export interface GroupHooks {
  /**
   * The write lock shared with the store's writer thread (thread-write-lock.ts): taken around
   * each group transaction, waited for (without blocking) while the thread holds it; `lockTimeoutMs`
   * (default 5,000) is how long, after which the batch's callers get its WriteLockTimeout.
   */
  lock?: MainWriteLock;
  lockTimeoutMs?: number;
  /** Before the first unit. */
  begin?(): void;
  /** After the last unit, before COMMIT; when it throws, the transaction is rolled back and every caller of the batch gets the error. */
  end?(): void;
}

/**
 * Runs `n` units (`run(i)`, in order) inside the caller's open transaction on `sqlite`, as a
 * group transaction runs them: `hooks.begin` first, `hooks.end` last; a unit that throws fails
 * alone (its outcome is the error) unless SQLite rolled the whole transaction back (e.g.
 * SQLITE_FULL: nothing of it holds), which is thrown. Used by the group commit here and by the
 * writer thread (sqlite-writer-worker.ts).
 */
export function unitOutcomes(sqlite: BetterSqlite3.Database, n: number, run: (i: number) => unknown, hooks: Pick<GroupHooks, 'begin' | 'end'>): Outcome[] {
  hooks.begin?.();
  const out: Outcome[] = [];
  for (let i = 0; i < n; i++) {
    try {
      out.push({ ok: true, value: run(i) });
    } catch (error) {
      if (!sqlite.inTransaction) throw error;
      out.push({ ok: false, error });
    }
  }
  hooks.end?.();
  return out;
}

/**
 * A {@link GroupCommit} over `sqlite`. `exclusive(fn)` runs `fn` while holding the connection
 * that Kysely shares (e.g. `(fn) => db.connection().execute(async () => fn())`); `hooks` run
 * inside each group transaction ({@link GroupHooks}).
 */
export function createGroupCommit(sqlite: BetterSqlite3.Database, exclusive: (fn: () => void) => Promise<void>, hooks: GroupHooks = {}): GroupCommit {
  let queue: Item[] = [];
  let scheduled = false;
  let blocked: Promise<void> | null = null;

  const group = sqlite.transaction((items: Item[]): Outcome[] => unitOutcomes(sqlite, items.length, (i) => items[i]!.work(), hooks));

  const commit = (items: Item[]): void => {
    if (items.length === 0) return;
    let outcomes: Outcome[];
    try {
      outcomes = group(items);
    } catch (err) {
      for (const it of items) it.reject(err);
      return;
    }
    outcomes.forEach((o, i) => (o.ok ? items[i]!.resolve(o.value) : items[i]!.reject(o.error)));
  };

  const take = (): Item[] => {
    const items = queue;
    queue = [];
    return items;
  };

  const flush = (): void => {
    scheduled = false;
    if (blocked || queue.length === 0) return; // a blocked batch flushes the queue when it gets its turn
    const lock = hooks.lock;
    if (!sqlite.inTransaction && (!lock || lock.tryAcquire())) {
      try {
        commit(take());
      } finally {
        lock?.release();
      }
      return;
    }
    let taken: Item[] = [];
    // In someone's open (Kysely) transaction: wait for Kysely's connection (its driver takes the
    // lock too, sqlite.ts). Else the writer thread holds the lock: wait for it.
    const wait = sqlite.inTransaction || !lock ? exclusive : (fn: () => void) => lock.acquire(hooks.lockTimeoutMs ?? 5_000).then(() => {
      try {
        fn();
      } finally {
        lock.release();
      }
    });
    blocked = wait(() => {
      taken = take();
      commit(taken);
    })
      .catch((err: unknown) => {
        for (const it of taken.length ? taken : take()) it.reject(err);
      })
      .finally(() => {
        blocked = null;
        schedule();
      });
  };

  const schedule = (): void => {
    if (scheduled || queue.length === 0) return;
    scheduled = true;
    setImmediate(flush);
  };

  return {
    run<T>(work: () => T): Promise<T> {
      return new Promise<T>((resolve, reject) => {
        queue.push({ work, resolve: resolve as (v: unknown) => void, reject });
        schedule();
      });
    },
    async drain() {
      while (blocked) await blocked;
      flush();
      while (blocked) await blocked;
    },
  };
}
