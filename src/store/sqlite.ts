import fs from 'node:fs';
import BetterSqlite3 from 'better-sqlite3';
import { Kysely, SqliteDialect, type Driver, type SqliteDialectConfig } from 'kysely';
import type { Database } from './schema.js';
import type { Store } from './types.js';
import { kyselyStore } from './kysely-store.js';
import { withSqliteFastPaths } from './sqlite-fast.js';
import { migrateToLatest } from './migrations/index.js';
import { withStatementCache } from './sqlite-statement-cache.js';
import { startCheckpointer, type Checkpointer } from './sqlite-checkpoint.js';
import { mainSide, newLockMemory, type MainWriteLock } from './thread-write-lock.js';

/** How long a statement waits for a lock held by another connection before SQLITE_BUSY, ms. */
const BUSY_TIMEOUT_MS = 5_000;

/**
 * Opens (creating if needed, mode 0600) the SQLite database at `file` (`:memory:` works too), sets
 * WAL, synchronous=NORMAL, busy_timeout, foreign keys on, and applies the migrations.
 * Does NOT take the data-folder lock: use openStore (open.ts) for a data folder.
 * `afterClose` runs after the database is closed.
 * @throws Error when the file cannot be opened or a migration fails.
 */
export async function openSqliteStore(file: string, afterClose?: () => void | Promise<void>): Promise<Store> {
  // The database holds receiver secrets and token hashes: owner-only, whatever the umask or the
  // folder's mode (a folder made beforehand may be 0755). SQLite gives the -wal and -shm files
  // the database file's mode.
  if (file !== ':memory:') {
    fs.closeSync(fs.openSync(file, 'a', 0o600));
    fs.chmodSync(file, 0o600);
  }
  const sqlite = new BetterSqlite3(file);
  try {
    sqlite.pragma('journal_mode = WAL');
    sqlite.pragma('synchronous = NORMAL');
    sqlite.pragma(`busy_timeout = ${BUSY_TIMEOUT_MS}`);
    sqlite.pragma('foreign_keys = ON');
  } catch (e) {
    sqlite.close();
    throw e;
  }
  // A file has a writer thread for the gateway's writes (sqlite-writer.ts); both connections
  // take this lock before writing (thread-write-lock.ts), Kysely's for as long as it holds its
  // connection (a query, or a transaction across its awaits).
  const lockMemory = file === ':memory:' ? null : newLockMemory();
  const lock = lockMemory ? mainSide(lockMemory) : null;
  const config: SqliteDialectConfig = { database: withStatementCache(sqlite) };
  const db = new Kysely<Database>({ dialect: lock ? new LockedSqliteDialect(config, lock) : new SqliteDialect(config) });
  try {
    await migrateToLatest(db, 'sqlite');
  } catch (e) {
    await db.destroy();
    throw e;
  }
  // WAL checkpoints on a worker thread, not inside a commit on the event loop (sqlite-checkpoint.ts).
  let checkpointer: Checkpointer | null = null;
  if (file !== ':memory:') {
    try {
      checkpointer = startCheckpointer(sqlite, file);
    } catch {
      // No thread: SQLite's own automatic checkpoint stays in charge, as before.
    }
  }
  // The thread's connection closes after the store's (as the last one, it removes the WAL).
  const closeAll = async () => {
    await checkpointer?.stop();
    await afterClose?.();
  };
  // The gateway's per-call statements without Kysely's overhead, and a token cache (sqlite-fast.ts).
  const thread = lock && lockMemory ? { file, lock, lockMemory, busyTimeoutMs: BUSY_TIMEOUT_MS } : undefined;
  return withSqliteFastPaths(kyselyStore(db, 'sqlite', closeAll), db, sqlite, { thread });
}

/**
 * Kysely's SQLite dialect whose driver holds `lock` (the event loop's side of the write lock
 * shared with the writer thread) while it holds its connection: taken after Kysely's own
 * connection mutex, released before it. Waiting for it does not block the event loop.
 * @throws (the query rejects with) WriteLockTimeout after {@link BUSY_TIMEOUT_MS}, as SQLite's busy_timeout would.
 */
class LockedSqliteDialect extends SqliteDialect {
  constructor(
    config: SqliteDialectConfig,
    private readonly lock: MainWriteLock,
  ) {
    super(config);
  }

  override createDriver(): Driver {
    const driver = super.createDriver();
    const acquire = driver.acquireConnection.bind(driver);
    const release = driver.releaseConnection.bind(driver);
    const lock = this.lock;
    driver.acquireConnection = async () => {
      const connection = await acquire();
      try {
        await lock.acquire(BUSY_TIMEOUT_MS);
      } catch (err) {
        await release(connection);
        throw err;
      }
      return connection;
    };
    driver.releaseConnection = async (connection) => {
      lock.release();
      await release(connection);
    };
    return driver;
  }
}
