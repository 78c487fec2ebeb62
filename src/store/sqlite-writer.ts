import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import BetterSqlite3 from 'better-sqlite3';
import { runBudgetUnit, type BudgetUnits, type LedgerArgs } from './sqlite-budget-units.js';
import type { GroupCommit } from './sqlite-group-commit.js';
import type { MainWriteLock } from './thread-write-lock.js';
import { packUnit, RING, SLEEPING, unpackOutcome, type WriterBatch, type WriterError, type WriterReply, type WriterSetup, type WriterUnit } from './sqlite-writer-wire.js';
import type { BudgetReservationResult } from './types.js';
import type { SettleFound } from './budgets.js';

/**
 * Where a SQLite store runs the gateway's per-call writes (the budget reserve and settle,
 * sqlite-budget-units.ts): on a writer thread with its own connection to the file
 * (sqlite-writer-worker.ts), so that their SQLite work — about a third of the gateway's CPU per
 * call at 64 concurrent clients (bench/gateway-cpu.bench.js with BENCH_GATEWAY_STORE=memory) —
 * is not on the event loop, which serves the HTTP side meanwhile.
 *
 * - The thread starts at the first unit (most stores never meter a call); until it says it is
 *   ready, units run in `group` on the store's own connection, as they did before the thread
 *   existed. It takes over inside a group transaction, after every unit queued before, so the
 *   units keep the order they were issued in.
 * - Units issued in one event-loop turn go to the thread as one batch at the next
 *   `setImmediate` (one message; the thread reads its port itself and is rung only when it
 *   sleeps, sqlite-writer-wire.ts RING), and it runs each batch as one transaction (the group commit of
 *   sqlite-group-commit.ts, same outcomes and errors: a unit that throws fails alone; a batch
 *   SQLite rolled back fails whole). Batches run in the order sent.
 * - A batch of at most {@link MAIN_BATCH_UNITS} units, when the thread sleeps with nothing in
 *   flight, runs in `group` on the store's connection instead: at low load, waking the thread
 *   would only add its wake-up to the call's path. The next batch waits for it, so the order holds.
 * - The two connections never meet a busy file: each takes the write lock of
 *   thread-write-lock.ts first.
 * - {@link SqliteWriter.barrier}: the store's other methods wait for the units sent before them
 *   (sqlite-fast.ts), so a read after a settle sees it, as with one connection.
 * - When the thread cannot start or stops (a crash), its units in flight are rejected with the
 *   error and later units run in `group` again.
 */
export interface SqliteWriter {
  /** sqlite-budget-units.ts reserve. @throws (rejects with) its error, or the thread's. */
  reserve(rootId: number, worst: number, now: number, ttlMs: number, callJson: string | null): Promise<BudgetReservationResult | null>;
  /** sqlite-budget-units.ts settle. @throws (rejects with) its error, or the thread's. */
  settle(rootId: number, reservationId: number, cost: number, now: number, row: LedgerArgs | null): Promise<SettleFound>;
  /** Null when no unit is waiting for the thread; else resolves (never rejects) once every unit issued so far is done. */
  barrier(): Promise<void> | null;
  /** True once the thread runs the units (for tests and diagnostics). */
  readonly onThread: boolean;
  /**
   * Whether a batch of at most {@link MAIN_BATCH_UNITS} units runs on the store's connection when
   * the thread sleeps with nothing in flight (default true; tests set it false to run every
   * batch on the thread).
   */
  smallBatchesOnMain: boolean;
  /** How many batches have been sent to the thread so far (diagnostics, tests). */
  readonly threadBatches: number;
  /** Waits for the units in flight, then closes the thread's connection and ends it. */
  close(): Promise<void>;
  /**
   * Ends the thread at once, as a crash would (Worker.terminate: its connection closes, a
   * transaction it had begun is rolled back): for tests of what its units then get. Resolves
   * once it has exited and the units it held are failed or handed to the store's connection.
   */
  kill(): Promise<void>;
}

/**
 * Batches sent to the thread and not answered yet, at most. A message to a thread that sleeps
 * costs the sender its wake-up (~15 µs here, a few times that on a busy machine); with two sent,
 * the thread mostly finds the next batch waiting when it ends one. More would only make the
 * batches smaller (measured at 64 clients, bench/gateway.bench.js: ~20 units a batch either way).
 */
const MAX_BATCHES_SENT = 2;

/**
 * The most units a batch may have to run on the store's connection instead of the thread, when
 * the thread sleeps and has nothing in flight. Waking it puts the scheduler's wake-up latency on
 * the calls' path (a reserve is on the way to the upstream): on 2 busy cores, 64 concurrent
 * streams (1–2 units a turn) got their first event 0.2–1.4 ms later with every batch on the
 * thread than with none in 6 of 7 interleaved rounds (bench/gateway-streams.bench.js,
 * 2026-12-06), and one client's p50 rose ~0.04 ms. Under load the batches are larger (~18 units at 64 non-streamed clients) or the
 * thread is awake, and they go to the thread, which takes their SQLite work off the event loop.
 */
export const MAIN_BATCH_UNITS = 2;

type Deferred = { resolve: (v: unknown) => void; reject: (e: unknown) => void };
type Pending = { units: WriterUnit[]; waiters: Deferred[]; done: Promise<void>; finish: () => void };

/**
 * A {@link SqliteWriter} for the database `file` (not `:memory:`: another connection cannot see
 * it): `lock` is the event loop's side of the write lock in `lockMemory`; `group` and `units`
 * run the units on the store's connection while the thread is not up. `busyTimeoutMs`: how long
 * the thread waits for the lock or a busy file before the batch fails (SQLite's busy_timeout).
 */
export function sqliteWriter(opts: { file: string; lock: MainWriteLock; lockMemory: SharedArrayBuffer; group: GroupCommit; units: BudgetUnits; busyTimeoutMs: number }): SqliteWriter {
  const { group, units } = opts;
  let state: 'idle' | 'starting' | 'thread' | 'main' | 'closed' = 'idle';
  let worker: Worker | null = null;
  let queued: Pending | null = null;
  const sent = new Map<number, Pending>();
  let nextId = 1;
  let last: Promise<void> | null = null;
  let exited: Promise<void> = Promise.resolve();
  /** True while a batch runs on the store's connection with the thread up (a small one, see flush). */
  let onMain = false;
  let smallOnMain = true;

  const doorbell = new SharedArrayBuffer(8);
  const bell = new Int32Array(doorbell);
  /** Wakes the thread when it waits for a batch (it reads the port itself otherwise). */
  const ring = () => {
    Atomics.add(bell, RING, 1);
    if (Atomics.load(bell, SLEEPING) === 1) Atomics.notify(bell, RING);
  };
  const newPending = (): Pending => {
    let finish!: () => void;
    const done = new Promise<void>((r) => (finish = r));
    return { units: [], waiters: [], done, finish };
  };
  const fail = (p: Pending, err: unknown) => {
    for (const w of p.waiters) w.reject(err);
    p.finish();
  };
  const errorOf = (e: WriterError): Error => {
    const err = e.code ? new BetterSqlite3.SqliteError(e.message, e.code) : new Error(e.message);
    if (!e.code) err.name = e.name;
    return err;
  };
  const settled = () => {
    if (sent.size === 0 && !queued && !onMain) {
      last = null;
      worker?.unref(); // idle: it never keeps the process alive
    }
  };

  /** Runs batch `p` on the store's connection (`group`), in order; `then` once every unit is done. */
  const runBatchOnMain = (p: Pending, then: () => void) => {
    const done = p.units.map((u, i) => runOnMain(u).then(p.waiters[i]!.resolve, p.waiters[i]!.reject));
    void Promise.all(done).then(() => {
      p.finish();
      then();
    });
  };

  const flush = () => {
    const p = queued;
    queued = null;
    if (!p) return;
    if (state !== 'thread' || !worker) {
      // The thread stopped after these were queued: on the store's connection, in order (the
      // barrier holds until they are done there).
      runBatchOnMain(p, () => undefined);
      return;
    }
    if (onMain || sent.size >= MAX_BATCHES_SENT) {
      // The units that come meanwhile wait for a reply (or the batch on the store's
      // connection) and go as the next batch: batches never overtake each other.
      queued = p;
      return;
    }
    if (smallOnMain && sent.size === 0 && p.units.length <= MAIN_BATCH_UNITS && Atomics.load(bell, SLEEPING) === 1) {
      onMain = true;
      runBatchOnMain(p, () => {
        onMain = false;
        if (queued) flush();
        settled();
      });
      return;
    }
    const id = nextId++;
    sent.set(id, p);
    worker.ref();
    worker.postMessage({ id, units: p.units.map(packUnit) } satisfies WriterBatch);
    ring();
  };

  const onReply = (msg: WriterReply | 'ready') => {
    if (msg === 'ready') {
      // Takes over inside a group transaction: every unit queued on the store's connection
      // before commits first (this unit runs after them), every later one goes to the thread.
      const take = () => {
        if (state === 'starting' && worker) state = 'thread';
      };
      if (state === 'starting') void group.run(take).catch(() => undefined);
      return;
    }
    const p = sent.get(msg.id);
    if (!p) return;
    sent.delete(msg.id);
    if ('error' in msg) fail(p, errorOf(msg.error));
    else {
      msg.outcomes.forEach((packed, i) => {
        const o = unpackOutcome(packed);
        if (o.ok) p.waiters[i]!.resolve(o.value);
        else p.waiters[i]!.reject(errorOf(o.error));
      });
      p.finish();
    }
    if (queued) flush(); // what came while it ran
    settled();
  };

  const onGone = (err: Error) => {
    opts.lock.forceReleaseWriter(); // it may have died holding the lock
    for (const p of sent.values()) fail(p, err);
    sent.clear();
    worker = null;
    if (state !== 'closed') state = 'main';
    if (queued) flush(); // waiting for a reply that will not come: on the store's connection
    settled();
  };

  const start = () => {
    state = 'starting';
    try {
      const [entry, extra] = workerEntry();
      const w = new Worker(entry, { ...extra, workerData: { file: opts.file, lock: opts.lockMemory, doorbell, busyTimeoutMs: opts.busyTimeoutMs } satisfies WriterSetup });
      worker = w;
      w.unref();
      w.on('message', onReply);
      w.on('error', (err) => onGone(new Error(`SQLite writer thread failed: ${err.message}`)));
      exited = new Promise((resolve) =>
        w.once('exit', (code) => {
          if (worker === w) onGone(new Error(`SQLite writer thread exited (code ${code})`));
          resolve();
        }),
      );
    } catch {
      state = 'main'; // no thread: the store's connection, as before
    }
  };

  const runOnMain = (u: WriterUnit): Promise<unknown> => group.run(() => runBudgetUnit(units, u));

  const run = (u: WriterUnit): Promise<unknown> => {
    if (state === 'idle') start();
    if (state !== 'thread') return runOnMain(u);
    return new Promise((resolve, reject) => {
      if (!queued) {
        queued = newPending();
        setImmediate(flush);
        const done = queued.done;
        last = done;
      }
      queued.units.push(u);
      queued.waiters.push({ resolve, reject });
    });
  };

  return {
    reserve: (rootId, worst, now, ttlMs, callJson) => run({ kind: 'reserve', rootId, worst, now, ttlMs, callJson }) as Promise<BudgetReservationResult | null>,
    settle: (rootId, reservationId, cost, now, row) => run({ kind: 'settle', rootId, reservationId, cost, now, row }) as Promise<SettleFound>,
    barrier: () => last,
    get onThread() {
      return state === 'thread';
    },
    get smallBatchesOnMain() {
      return smallOnMain;
    },
    set smallBatchesOnMain(on: boolean) {
      smallOnMain = on;
    },
    get threadBatches() {
      return nextId - 1;
    },
    async close() {
      if (state === 'starting') await group.drain(); // its take-over unit, if it is ready
      while (last) await last; // what is queued or in flight: done where it was sent
      const w = worker;
      state = 'closed';
      if (!w) return;
      worker = null;
      w.ref();
      w.postMessage('close');
      ring();
      await exited;
    },
    async kill() {
      await worker?.terminate();
      await exited;
    },
  };
}

/**
 * The thread's module and options: the compiled `.js` beside this one, or — when this module
 * runs from its TypeScript source (the test suite, through vitest) — a bootstrap that registers
 * tsx's loader in the thread and imports the `.ts` source (Node 20 runs no TypeScript itself,
 * and a loader given by `--import` in a thread's execArgv does not reach its own imports).
 */
function workerEntry(): [URL | string, { eval?: boolean }] {
  const source = new URL('./sqlite-writer-worker.ts', import.meta.url);
  if (!import.meta.url.endsWith('.ts')) return [new URL('./sqlite-writer-worker.js', import.meta.url), {}];
  // tsx's ESM API (its package's `./esm/api` import entry; resolving it here would give the require one)
  const api = pathToFileURL(join(dirname(createRequire(import.meta.url).resolve('tsx/package.json')), 'dist/esm/api/index.mjs')).href;
  const boot = `import(${JSON.stringify(api)}).then(({ register }) => { register(); return import(${JSON.stringify(source.href)}); })`;
  return [boot, { eval: true }];
}
