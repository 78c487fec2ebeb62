import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openPostgresStore, openSqliteStore } from '../store/open.js';
import { createTestDatabase } from '../store/test-pg.js';
import type { Store } from '../store/types.js';

// The two store set-ups the gateway's budget tests run against (tests only): one gateway over a
// fresh SQLite file, and two gateways (two store instances) over one fresh PostgreSQL database.

/** Runs `run([store])` over a fresh SQLite store in a temp folder, then closes and removes it. */
export async function onSqlite(run: (stores: Store[]) => Promise<void>): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'flotilla-gw-'));
  const store = await openSqliteStore(join(dir, 'flotilla.db'));
  try {
    await run([store]);
  } finally {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * Runs `run([a, b])` over two store instances on one fresh PostgreSQL database (as two gateway
 * processes would be), then drops it. Calls `skip` (a vitest context's) when PostgreSQL is unreachable.
 */
export async function onTwoPostgres(run: (stores: Store[]) => Promise<void>, skip: () => void): Promise<void> {
  const db = await createTestDatabase();
  if (!db) return skip();
  const a = await openPostgresStore(db.url, { maxConnections: 4 });
  const b = await openPostgresStore(db.url, { maxConnections: 4 });
  try {
    await run([a, b]);
  } finally {
    await a.close();
    await b.close();
    await db.drop();
  }
}
