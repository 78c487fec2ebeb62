import path from 'node:path';
import type { Logger } from '../core/log.js';
import { silentLogger } from '../core/log.js';
import { makeDir } from '../core/make-dir.js';
import { SettingError } from '../core/setting-env.js';
import type { Store } from './types.js';
import { lockDataFolder } from './lock.js';
import { openSqliteStore } from './sqlite.js';
import { openPostgresStore, safeUrl } from './postgres.js';

export { openSqliteStore } from './sqlite.js';
export { openPostgresStore } from './postgres.js';

/** Options for {@link openStore}. */
export interface OpenStoreOptions {
  /** `postgres://...` or `postgresql://...`: use PostgreSQL. Unset or empty: SQLite in `dataDir`. */
  databaseUrl?: string;
  /** The data folder (created with mode 0700); SQLite lives at `<dataDir>/flotilla.db`. */
  dataDir: string;
  log?: Logger;
}

/**
 * Opens the store and applies migrations. With `databaseUrl` → PostgreSQL; otherwise SQLite
 * at `<dataDir>/flotilla.db`, after taking the data folder's exclusive lock (released by
 * `close()`).
 * @throws Error "data folder X is in use by process N" when another live process holds the
 *   folder; SettingError naming `databaseUrl` when it is not a postgres URL; driver/migration errors.
 */
export async function openStore(opts: OpenStoreOptions): Promise<Store> {
  const log = opts.log ?? silentLogger;
  const url = opts.databaseUrl?.trim();
  if (url) {
    assertDatabaseUrl(url);
    const t0 = Date.now();
    const store = await openPostgresStore(url, { log });
    log.info('store opened', { dialect: 'postgres', url: safeUrl(url), ms: Date.now() - t0 });
    return store;
  }
  if (!opts.dataDir) throw new Error('dataDir is required when databaseUrl is not set');
  const dir = path.resolve(opts.dataDir);
  await makeDir(dir, 0o700); // not Node's recursive mkdir: it spins on some paths (core/make-dir.ts)
  const lock = lockDataFolder(dir);
  try {
    const t0 = Date.now();
    const file = path.join(dir, 'flotilla.db');
    const store = await openSqliteStore(file, () => lock.release());
    log.info('store opened', { dialect: 'sqlite', file, ms: Date.now() - t0 });
    return store;
  } catch (e) {
    lock.release();
    throw e;
  }
}

/**
 * Refuses a DATABASE_URL that is not a PostgreSQL URL (password masked in the message).
 * @throws SettingError `DATABASE_URL must start with postgres:// or postgresql://, got "mysql://u:***@h/db"`.
 */
export function assertDatabaseUrl(url: string): void {
  if (!/^postgres(ql)?:\/\//.test(url)) throw new SettingError(`DATABASE_URL must start with postgres:// or postgresql://, got ${JSON.stringify(safeUrl(url))}`);
}
