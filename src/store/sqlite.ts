import fs from 'node:fs';
import BetterSqlite3 from 'better-sqlite3';
import { Kysely, SqliteDialect } from 'kysely';
import type { Database } from './schema.js';
import type { Store } from './types.js';
import { kyselyStore } from './kysely-store.js';
import { withSqliteFastPaths } from './sqlite-fast.js';
import { migrateToLatest } from './migrations/index.js';
import { withStatementCache } from './sqlite-statement-cache.js';
import { startCheckpointer, type Checkpointer } from './sqlite-checkpoint.js';

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
  const db = new Kysely<Database>({ dialect: new SqliteDialect({ database: withStatementCache(sqlite) }) });
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
  return withSqliteFastPaths(kyselyStore(db, 'sqlite', closeAll), db, sqlite);
}
