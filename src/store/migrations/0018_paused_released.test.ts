import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { Kysely, PostgresDialect, SqliteDialect } from 'kysely';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { createTestDatabase } from '../test-pg.js';
import { pausedReleased } from './0018_paused_released.js';

/** A jobs table with only the columns 0018 reads and writes; rows: paused unreleased, paused released at 5, running. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations are untyped (as in the migration itself)
async function seed(db: Kysely<any>): Promise<void> {
  await db.schema.createTable('jobs').addColumn('id', 'integer', (c) => c.primaryKey()).addColumn('status', 'text').addColumn('finished_at', 'bigint').execute();
  await db
    .insertInto('jobs')
    .values([
      { id: 1, status: 'paused', finished_at: null },
      { id: 2, status: 'paused', finished_at: 5 },
      { id: 3, status: 'running', finished_at: null },
    ])
    .execute();
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- as above
async function check(db: Kysely<any>): Promise<void> {
  const before = Date.now();
  await pausedReleased().up(db);
  const rows = (await db.selectFrom('jobs').select(['id', 'finished_at']).orderBy('id').execute()) as { id: number; finished_at: number | string | null }[];
  const at = rows.map((r) => (r.finished_at === null ? null : Number(r.finished_at)));
  expect(at[0]).toBeGreaterThanOrEqual(before); // the old pause no longer holds its runner's slot
  expect(at.slice(1)).toEqual([5, null]); // a released pause and a running job are left as they were
}

const pgDb = await createTestDatabase();
afterAll(async () => {
  await pgDb?.drop();
});

describe('migration 0018: pauses from before the slot rule are released', () => {
  it('SQLite', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'flotilla-0018-'));
    const db = new Kysely<unknown>({ dialect: new SqliteDialect({ database: new BetterSqlite3(join(dir, 'x.db')) }) });
    try {
      await seed(db);
      await check(db);
    } finally {
      await db.destroy();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it.skipIf(pgDb === null)('PostgreSQL', async () => {
    const db = new Kysely<unknown>({ dialect: new PostgresDialect({ pool: new pg.Pool({ connectionString: pgDb!.url, max: 1 }) }) });
    try {
      await seed(db);
      await check(db);
    } finally {
      await db.destroy();
    }
  });
});
