import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { Kysely, PostgresDialect } from 'kysely';
import { afterAll, beforeAll } from 'vitest';
import { codecFor } from './codec.js';
import type { StoreCtx } from './ctx.js';
import { openPostgresStore, safeUrl } from './postgres.js';
import type { Database } from './schema.js';
import type { Store } from './types.js';

/** The server the PostgreSQL test suites use: `FLOTILLA_TEST_PG_URL`, default trust-auth postgres on localhost. */
export function testPgBaseUrl(): string {
  return process.env.FLOTILLA_TEST_PG_URL || 'postgres://postgres@127.0.0.1:5432/postgres';
}

/** A throwaway database: `url` points at it; `drop()` removes it (forcing out open connections). */
export interface TestDatabase {
  url: string;
  drop(): Promise<void>;
}

/**
 * For test suites: creates a fresh, empty database `flotilla_t_<pid>_<random>` on the test
 * server ({@link testPgBaseUrl}).
 * @returns null when the server cannot be reached (the caller skips its PostgreSQL tests),
 *   except under `CI=true`, where an unreachable server is an error: a skipped PostgreSQL
 *   suite in CI is a failure.
 * @throws Error when unreachable under CI, or when CREATE DATABASE fails.
 */
export async function createTestDatabase(): Promise<TestDatabase | null> {
  const base = testPgBaseUrl();
  const admin = new pg.Client({ connectionString: base, connectionTimeoutMillis: 3_000 });
  try {
    await admin.connect();
  } catch (e) {
    await admin.end().catch(() => {});
    if (process.env.CI === 'true') {
      throw new Error(`PostgreSQL test server unreachable at ${safeUrl(base)} and CI=true (set FLOTILLA_TEST_PG_URL): ${(e as Error).message}`);
    }
    return null;
  }
  const name = `flotilla_t_${process.pid}_${randomBytes(4).toString('hex')}`;
  try {
    await admin.query(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end().catch(() => {});
  }
  const u = new URL(base);
  u.pathname = `/${name}`;
  let dropped = false;
  return {
    url: u.toString(),
    async drop() {
      if (dropped) return;
      dropped = true;
      const c = new pg.Client({ connectionString: base, connectionTimeoutMillis: 3_000 });
      await c.connect();
      try {
        // Without FORCE first, for up to 2 s: a client still ending (its Terminate not yet read by
        // the server) was killed by FORCE and emitted the FATAL 57P01 as an uncaught error in the
        // test process (CI finding). FORCE only for connections a test left open.
        for (let i = 0; i < 20; i++) {
          try {
            await c.query(`DROP DATABASE IF EXISTS ${name}`);
            return;
          } catch (err) {
            if ((err as { code?: string }).code !== '55006') throw err; // 55006: object_in_use (other sessions)
            await new Promise((r) => setTimeout(r, 100));
          }
        }
        await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      } finally {
        await c.end().catch(() => {});
      }
    },
  };
}


/**
 * What a test of PostgreSQL store internals needs on test database `db`: the store, a
 * {@link StoreCtx} of its own (to call the internals directly) and a plain client (to hold locks
 * as another writer would), made in `beforeAll` and ended in `afterAll` (nothing when `db` is
 * null: no PostgreSQL here). Read the fields inside tests.
 */
export function pgStoreFixture(db: TestDatabase | null): { store: Store; ctx: StoreCtx; raw: pg.Client } {
  const f = {} as { store: Store; ctx: StoreCtx; raw: pg.Client };
  beforeAll(async () => {
    if (!db) return;
    f.store = await openPostgresStore(db.url, { maxConnections: 2 });
    const pool = new pg.Pool({ connectionString: db.url, max: 2 });
    f.ctx = { db: new Kysely<Database>({ dialect: new PostgresDialect({ pool }) }), codec: codecFor('postgres'), dialect: 'postgres' };
    f.raw = new pg.Client({ connectionString: db.url });
    await f.raw.connect();
  });
  afterAll(async () => {
    await f.raw?.end();
    await f.ctx?.db.destroy();
    await f.store?.close();
    await db?.drop();
  });
  return f;
}
