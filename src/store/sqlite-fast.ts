import type BetterSqlite3 from 'better-sqlite3';
import type { Kysely } from 'kysely';
import { assertInt } from './ctx.js';
import { DEFAULT_RESERVATION_TTL_MS } from './budgets.js';
import { chargeSubLimitsLate } from './job-budgets.js';
import { createGroupCommit } from './sqlite-group-commit.js';
import { sqliteTreeRows } from './sqlite-tree-rows.js';
import { ledgerArgs, sqliteBudgetUnits, type LedgerArgs } from './sqlite-budget-units.js';
import { sqliteWriter } from './sqlite-writer.js';
import type { MainWriteLock } from './thread-write-lock.js';
import { sqliteActivityNotes, type ActivityNotes } from './sqlite-activity.js';
import { codecFor } from './codec.js';
import { frameSql } from './runner-frame.js';
import { sqliteFrameApplier } from './sqlite-frame.js';
import { sqliteClaimApplier } from './sqlite-claim.js';
import { sqliteDispatchStateReader } from './sqlite-dispatch-state.js';
import type { DispatchState } from './dispatch-state.js';
import { checkClaims } from './claim-batch.js';
import type { Database } from './schema.js';
import type { JobRow, NewModelCall, PendingCall, Store } from './types.js';
import { encodePendingCall } from './pending-call.js';

/** How long a job-token lookup is reused on SQLite, ms (any store write that may change a job clears it at once). */
export const TOKEN_CACHE_TTL_MS = 1000;

/** A store of {@link withSqliteFastPaths} answers this key with its SqliteWriter (sqlite-writer.ts; null without one): for tests and diagnostics. */
export const SQLITE_WRITER = Symbol('flotilla.sqliteWriter');

/** What {@link withSqliteFastPaths} takes besides the store. */
export interface SqliteFastOptions {
  /** How long a job-token lookup is reused, ms (default {@link TOKEN_CACHE_TTL_MS}). */
  tokenTtlMs?: number;
  /**
   * The gateway's reserves and settles on a writer thread (sqlite-writer.ts): the database
   * file, the write lock both connections take (thread-write-lock.ts; the store's Kysely
   * driver takes `lock` too, sqlite.ts), how long either waits for it, ms. Without it (a
   * `:memory:` database), they run on the store's connection.
   */
  thread?: { file: string; lockMemory: SharedArrayBuffer; lock: MainWriteLock; busyTimeoutMs: number };
}

/**
 * Store methods that never change a job's status or token: they leave the token cache alone.
 * Every other method (including ones added later) clears it before and after it runs.
 */
const KEEPS_TOKENS = /^(get|list|find|count)|^(jobUsage|jobUsageMany|costRollup|reserveBudget|budgetResumeHolds|syncBudgetHolds|lapseBudgetHolds|listBudgetWaitingTrees|setPausedNeed|topUpJobBudget|settleBudget|recordModelCall|releaseExpiredReservations|extendBudgetReservation|noteModelCall|modelCallActivity|appendEventsIfQueued|setModelRoute|deleteModelRoute|setModelPrice|deleteModelPrice|addTaskBudget|taskOfTurnJob|close|dialect)$/;

/**
 * The gateway's per-call store work on SQLite without Kysely's per-statement overhead (query
 * compile, `prepare`, async hops — measured with bench/gateway.bench.js and --cpu-prof):
 * - `reserveBudget` / `settleBudget`: the writes of budgets.ts (the conditional UPDATE of the
 *   tree's row + reservation INSERT; ledger INSERT + DELETE + UPDATE of the tree's row),
 *   prepared once, each call's writes atomic (without a savepoint: see `abandonGroup`) and
 *   group-committed with the other calls of the same event-loop turn (sqlite-group-commit.ts:
 *   one transaction per batch, never inside a Kysely transaction); after a batch's first
 *   reserve of a tree, its other units work on that row in memory, written back once
 *   (sqlite-tree-rows.ts). The rare paths (the call does not fit, the
 *   tree's row does not exist yet) fall back to budgets.ts.
 * - `noteModelCall` (when the store has it): the upsert of model-activity.ts, prepared, merged
 *   per (job, attempt) and written at most every 100 ms in the group commit
 *   (sqlite-activity.ts); `modelCallActivity` writes what is pending before it reads.
 * - `applyRunnerFrame` (a runner's events and the status change they carry): the statements of
 *   runner-frame.ts prepared once (sqlite-frame.ts), group-committed like the settles; a job
 *   whose children's results are collected goes to the Kysely implementation.
 * - `claimJobsById` (a dispatch pass's claims with their `assigned` events): the statements of
 *   claim-batch.ts prepared once (sqlite-claim.ts), group-committed the same way.
 * - `listDispatchState` (a dispatch pass's first reads): prepared (sqlite-dispatch-state.ts),
 *   read outside any open transaction.
 * - On a database file, the reserves and settles run on a writer thread with its own connection
 *   (sqlite-writer.ts), once it is up: their SQLite work is then off the event loop. Both
 *   connections take the write lock of thread-write-lock.ts before writing; every other method
 *   of this store first waits for the units already sent (the writer's barrier).
 * - `writesInTurnOrder` (types.ts): true — a settle is queued for the group commit of the turn
 *   it is issued in (or the writer thread's next batch), and whatever this store runs later
 *   runs after it, so the gateway sends a JSON reply without waiting for it (meter.ts).
 * - `findJobByTokenHash`: a hit is reused for {@link TOKEN_CACHE_TTL_MS}. A SQLite data folder
 *   has one writer process (open.ts lock), so every write that could end a job or kill a token
 *   goes through this object: any call of a method not in KEEPS_TOKENS clears the cache before
 *   and after it runs, and a lookup that overlapped such a call is not cached. So a token is
 *   refused the moment its job ends, pauses or is cancelled. (Not used on PostgreSQL, where
 *   other replicas write too.)
 * Results and errors are those of the Kysely implementation.
 */
export function withSqliteFastPaths(store: Store, db: Kysely<Database>, sqlite: BetterSqlite3.Database, opts: SqliteFastOptions = {}): Store {
  const tokenTtlMs = opts.tokenTtlMs ?? TOKEN_CACHE_TTL_MS;
  // The tree budget rows a group transaction holds in memory after its first reserve of each (sqlite-tree-rows.ts).
  const trees = sqliteTreeRows(sqlite);
  // Kysely's SQLite driver holds the connection for a whole transaction: a batch that finds one
  // open waits for the connection (sqlite-group-commit.ts).
  const thread = opts.thread;
  const group = createGroupCommit(sqlite, (fn) => db.connection().execute(async () => fn()), { begin: trees.reset, end: trees.flush, lock: thread?.lock, lockTimeoutMs: thread?.busyTimeoutMs });
  const tokens = new Map<string, { job: JobRow; at: number }>();
  let generation = 0;
  /** Writes the activity notes not written yet (set below when the store notes activity). */
  let flushActivity = (): Promise<void> => Promise.resolve();
  const clear = () => {
    generation++;
    tokens.clear();
  };

  // The reserve and the settle (sqlite-budget-units.ts), on this connection.
  const units = sqliteBudgetUnits(sqlite, trees);
  // ...or on the writer thread's connection, once it is up (sqlite-writer.ts).
  const writer = thread ? sqliteWriter({ ...thread, group, units }) : null;
  const reserveUnit = writer ? writer.reserve : (rootId: number, worst: number, now: number, ttlMs: number, callJson: string | null) => group.run(() => units.reserve(rootId, worst, now, ttlMs, callJson));
  const settleUnit = writer
    ? writer.settle
    : (rootId: number, reservationId: number, cost: number, now: number, row: LedgerArgs | null) => group.run(() => units.settle(rootId, reservationId, cost, now, row));

  // A runner's job.events frame (store/runner-frame.ts), group-committed (sqlite-frame.ts).
  const codec = codecFor('sqlite');
  const frame = sqliteFrameApplier(sqlite, codec);
  // A dispatch pass's claims (store/claim-batch.ts), group-committed the same way (sqlite-claim.ts).
  const claim = sqliteClaimApplier(sqlite, codec);
  // A dispatch pass's first reads (store/dispatch-state.ts), prepared (sqlite-dispatch-state.ts).
  const dispatchState = sqliteDispatchStateReader(sqlite, codec);

  const fast: Partial<Store> = {
    writesInTurnOrder: true,
    async applyRunnerFrame(f, now) {
      const q = frameSql(codec, f, now); // validation errors come from here, before any write
      // It may end the job: its token dies (cleared before and after, as for every such method).
      clear();
      try {
        const out = await group.run(() => (trees.flush(), frame(q)));
        return out === 'kysely' ? await store.applyRunnerFrame(f, now) : out;
      } finally {
        clear();
      }
    },
    async listDispatchState(limit, now) {
      dispatchState.check(limit, now);
      // Never inside another caller's open (Kysely) transaction: its uncommitted writes would
      // be read. Kysely holds the connection for a transaction's length: wait for it then.
      if (!sqlite.inTransaction) return dispatchState.read(limit, now);
      let out: DispatchState | undefined;
      await db.connection().execute(async () => {
        out = dispatchState.read(limit, now);
      });
      return out!;
    },
    async claimJobsById(claims, now) {
      checkClaims(claims, now); // validation errors come from here, before any write
      if (claims.length === 0) return [];
      const at = new Date(now).toISOString();
      // New job tokens: cleared before and after, as for every method that may change one.
      clear();
      try {
        return await group.run(() => (trees.flush(), claim(claims, now, at)));
      } finally {
        clear();
      }
    },
    async reserveBudget(rootId, worstMicros, now, ttlMs = DEFAULT_RESERVATION_TTL_MS, jobId?: number, call?: PendingCall, holder?: number) {
      // issue 6: a child job's call may have sub-limits on its path, and a resumed job's call
      // reads its own hold (budget-holds.ts): budgets.ts/job-budgets.ts, after the units issued
      // before it (a settle not awaited frees room it may need), as every other method of the
      // store waits for them (the Proxy below)
      if (jobId !== undefined || holder !== undefined) {
        const before = writer?.barrier();
        if (before) await before;
        return store.reserveBudget(rootId, worstMicros, now, ttlMs, jobId, call, holder);
      }
      assertInt('rootId', rootId, 1);
      assertInt('worstMicros', worstMicros, 0);
      assertInt('now', now, 0);
      assertInt('ttlMs', ttlMs, 1);
      const callJson = encodePendingCall(call);
      const done = await reserveUnit(rootId, worstMicros, now, ttlMs, callJson);
      return done ?? store.reserveBudget(rootId, worstMicros, now, ttlMs, undefined, call);
    },
    async settleBudget(rootId, reservationId, costMicros, now, call?: NewModelCall) {
      assertInt('rootId', rootId, 1);
      assertInt('reservationId', reservationId, 1);
      assertInt('costMicros', costMicros, 0);
      const row = call ? ledgerArgs(call) : null;
      const found = await settleUnit(rootId, reservationId, costMicros, now, row);
      if (found === 'gone' && call) await chargeSubLimitsLate(db, call.jobId, costMicros, now);
      return found === 'held';
    },
    async close() {
      await flushActivity(); // activity notes not written yet
      await group.drain(); // queued settles and notes are written before the database closes
      await writer?.close(); // and those on the writer thread (its connection closes first)
      clear();
      return store.close();
    },
    async findJobByTokenHash(hash) {
      const hit = tokens.get(hash);
      if (hit && Date.now() - hit.at < tokenTtlMs) return hit.job;
      const gen = generation;
      const job = await store.findJobByTokenHash(hash);
      if (job && gen === generation) tokens.set(hash, { job, at: Date.now() });
      return job;
    },
  };

  // Model-call activity (store/model-activity.ts, issue 4): noted at each call's start and end
  // by the gateway, so on the per-call path too: merged per (job, attempt) and written at most
  // every ACTIVITY_WRITE_INTERVAL_MS in the group commit (sqlite-activity.ts); this store's
  // reads of it write what is pending first. When the table or method is not there, the
  // store's own method runs.
  const base = store as unknown as Record<string, unknown>;
  if (typeof base.noteModelCall === 'function' && typeof base.modelCallActivity === 'function') {
    const kyselyNote = (base.noteModelCall as Store['noteModelCall']).bind(store);
    const kyselyRead = (base.modelCallActivity as Store['modelCallActivity']).bind(store);
    let notes: ActivityNotes | null | undefined;
    const activity = (): ActivityNotes | null => {
      if (notes !== undefined) return notes;
      try {
        const upsert = sqlite.prepare(
          'insert into model_call_activity (job_id, attempt, in_flight, last_at) values (@jobId, @attempt, @starts, @now) on conflict (job_id, attempt) do update set ' +
            'in_flight = max(model_call_activity.in_flight - @ends, 0) + @starts, last_at = max(model_call_activity.last_at, @now)',
        );
        notes = sqliteActivityNotes(upsert, group);
      } catch {
        notes = null; // no table yet (before the migrations)
      }
      return notes;
    };
    flushActivity = () => notes?.flush() ?? Promise.resolve();
    // Not async: the note's own promise (shared by the notes merged into one write,
    // sqlite-activity.ts), without one more promise per note waiting on it.
    fast.noteModelCall = (jobId, attempt, phase, now) => {
      const n = activity();
      if (!n || (phase !== 'start' && phase !== 'end') || !Number.isSafeInteger(jobId) || !Number.isSafeInteger(attempt) || !Number.isSafeInteger(now) || jobId < 1 || attempt < 0 || now < 0) {
        return kyselyNote(jobId, attempt, phase, now); // validation errors come from there
      }
      return n.note(jobId, attempt, phase, now);
    };
    fast.modelCallActivity = async (attempts) => {
      await flushActivity();
      return kyselyRead(attempts);
    };
  }

  /** `method` of the store run as every method but `fast`'s is: after the writer's barrier, the token cache cleared around it unless it keeps tokens. */
  const wrap = (prop: string, method: (...a: unknown[]) => Promise<unknown>) => {
    // Every other method runs after the units already sent to the writer thread (its
    // barrier): a read after a settle sees it, as on one connection.
    if (KEEPS_TOKENS.test(prop)) {
      if (!writer) return method;
      return (...args: unknown[]) => {
        const before = writer.barrier();
        return before ? before.then(() => method.apply(store, args)) : method.apply(store, args);
      };
    }
    return async (...args: unknown[]) => {
      clear();
      try {
        const before = writer?.barrier();
        if (before) await before;
        return await method.apply(store, args);
      } finally {
        clear();
      }
    };
  };
  // A plain object made once, not a Proxy: the gateway reads this store's methods several times
  // a call, and a Proxy's get trap (with a new wrapper each time) cost ~2 % of the event loop's
  // instructions per call at 64 clients (callgrind, 2026-12-08). The store is an object literal
  // of methods (kysely-store.ts): its own properties are all there is.
  const out: Record<string | symbol, unknown> = {};
  const own = fast as Record<string, unknown>;
  for (const [prop, v] of Object.entries(store)) out[prop] = Object.hasOwn(own, prop) ? own[prop] : typeof v === 'function' ? wrap(prop, v as (...a: unknown[]) => Promise<unknown>) : v;
  for (const prop of Object.keys(own)) if (!Object.hasOwn(out, prop)) out[prop] = own[prop];
  out[SQLITE_WRITER] = writer;
  return out as unknown as Store;
}

