import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import type BetterSqlite3 from 'better-sqlite3';

/**
 * How often the checkpoint thread copies the WAL into the database file, ms. Each checkpoint
 * fsyncs both files, and the store's writes to the WAL meanwhile can stall behind that I/O:
 * at 100 ms the gateway's p99 at 1 client was +1.8..2.1 ms over its upstream, at 1,000 ms
 * +0.7..0.9 ms (p50 unchanged; bench/gateway.bench.js, 2 cores, ext4). At the rates measured
 * (~8,000 WAL frames/s from the gateway at 1 client, ~5,000 at 64, ~4,000 from webhook intake
 * at 2,000 deliveries/s) the WAL stays under {@link FALLBACK_AUTOCHECKPOINT_PAGES}.
 */
export const CHECKPOINT_INTERVAL_MS = 1000;

/** WAL size, in frames (pages), from which the checkpoint thread copies it wholly so that the writer starts it over (~16 MB of 4 KiB pages; ~1 s of webhook intake at 2,000 deliveries/s, ~0.5 s of gateway calls at 1 client). */
export const RESTART_FRAMES = 4_000;

/**
 * WAL size, in pages, at which a commit on the store's own connection checkpoints anyway
 * (SQLite's `wal_autocheckpoint`; its default is 1,000). A backstop for when the checkpoint
 * thread is gone or behind: the WAL stays bounded (~80 MB of 4 KiB pages), at the old cost.
 * Twice the most the thread lets it grow between two of its checkpoints at the rates measured.
 */
export const FALLBACK_AUTOCHECKPOINT_PAGES = 20_000;

/** The checkpoint thread of one database (see {@link startCheckpointer}). */
export interface Checkpointer {
  /** Stops the thread and closes its connection (before the store's own connection closes, so that one still removes the WAL). */
  stop(): Promise<void>;
}

// The thread's code: its own connection to the file, a PASSIVE checkpoint every interval
// (copies what it can, never waits for the writer or readers, a no-op when nothing is new).
// Once the WAL holds {@link RESTART_FRAMES}, frames the writer appended meanwhile are copied by
// more passes (each shorter; at most 6): a pass that finds no new frame (its `log`, the WAL's
// frame count when it started, is the previous pass's) means the WAL is wholly copied, and the
// writer's next transaction then starts it over from the beginning (that transaction fsyncs
// the new WAL header: one small fsync on the event loop per restart, hence not at every tick).
// So the WAL stays under ~16 MB and the store's connection never reaches its own threshold. A failing
// checkpoint (SQLITE_BUSY from a concurrent checkpoint: the fallback's) is retried at the next
// tick; the thread never writes rows. Plain CommonJS (eval), so it runs the same from src/
// under vitest and from dist/.
const THREAD = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.driver);
const db = new Database(workerData.file, { fileMustExist: true });
db.pragma('wal_autocheckpoint = 0');
const timer = setInterval(() => {
  try {
    let before = -1;
    for (let pass = 0; pass < 6; pass++) {
      const [r] = db.pragma('wal_checkpoint(PASSIVE)');
      if (!r || r.busy !== 0 || r.log === before || r.log < workerData.restartFrames) break;
      before = r.log;
    }
  } catch {}
}, workerData.intervalMs);
parentPort.on('message', () => {
  clearInterval(timer);
  db.close();
  parentPort.close();
});
`;

/**
 * Moves SQLite's WAL checkpoints off the event loop (issue 7 tail latency). With
 * `synchronous = NORMAL` a commit only appends to the WAL; every 1,000 pages SQLite's automatic
 * checkpoint then ran INSIDE the committing call, on the server's one thread: it wrote the pages
 * back to the database file and fsynced both files, stalling every request for a few to tens of
 * ms (bench/webhooks.bench.js at 2,000 deliveries/s: about two such stalls a second, which made
 * its p99). Here a worker thread with its own connection checkpoints every
 * {@link CHECKPOINT_INTERVAL_MS} ms (PASSIVE: concurrent with the writer, WAL mode allows it),
 * and the store's connection checkpoints itself only past {@link FALLBACK_AUTOCHECKPOINT_PAGES}.
 * Durability is unchanged: a commit is durable as before (WAL append, synchronous=NORMAL); the
 * checkpoint only moves committed pages into the database file, and fsyncs them as before.
 * The thread is unref'd: it never keeps the process alive. Not for `:memory:` (no WAL).
 * @throws Error when the worker cannot be started (the caller may go on without it).
 */
export function startCheckpointer(sqlite: BetterSqlite3.Database, file: string): Checkpointer {
  const driver = createRequire(import.meta.url).resolve('better-sqlite3');
  const worker = new Worker(THREAD, { eval: true, workerData: { driver, file, intervalMs: CHECKPOINT_INTERVAL_MS, restartFrames: RESTART_FRAMES } });
  worker.unref();
  let stopped: Promise<void> | null = null;
  worker.on('error', () => {}); // reported by its exit, below
  const exited = new Promise<void>((resolve) =>
    worker.once('exit', () => {
      // A thread that died (could not open the file, ...) hands checkpoints back to SQLite's default.
      if (!stopped) restoreDefault(sqlite);
      resolve();
    }),
  );
  sqlite.pragma(`wal_autocheckpoint = ${FALLBACK_AUTOCHECKPOINT_PAGES}`);
  return {
    stop: () =>
      (stopped ??= (async () => {
        worker.ref(); // the close waits for it even when nothing else keeps the process alive
        worker.postMessage('stop');
        await exited;
      })()),
  };
}

/** SQLite's default automatic checkpoint (1,000 pages) on `sqlite`, unless it is closed already. */
function restoreDefault(sqlite: BetterSqlite3.Database): void {
  try {
    if (sqlite.open) sqlite.pragma('wal_autocheckpoint = 1000');
  } catch {
    // closing meanwhile: nothing to restore
  }
}
