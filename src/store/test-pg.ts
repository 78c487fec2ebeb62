import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { safeUrl } from './postgres.js';

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
        await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      } finally {
        await c.end().catch(() => {});
      }
    },
  };
}

