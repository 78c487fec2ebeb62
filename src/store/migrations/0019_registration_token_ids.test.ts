import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { Kysely, PostgresDialect, SqliteDialect, sql } from 'kysely';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import type { SqlDialect } from '../schema.js';
import { createTestDatabase } from '../test-pg.js';
import { registrationTokenIds } from './0019_registration_token_ids.js';

/** The table as 0001 made it, with three tokens: created at 30 (used), 10, 20 (out of insert order). */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations are untyped (as in the migration itself)
async function seed(db: Kysely<any>, dialect: SqlDialect): Promise<void> {
  await db.schema
    .createTable('registration_tokens')
    .addColumn('token_hash', 'text', (c) => c.primaryKey())
    .addColumn('labels', sql.raw(dialect === 'postgres' ? 'jsonb' : 'text'), (c) => c.notNull())
    .addColumn('expires_at', 'bigint', (c) => c.notNull())
    .addColumn('used_at', 'bigint')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db
    .insertInto('registration_tokens')
    .values([
      { token_hash: 'hc', labels: '{"os":"mac"}', expires_at: 300, used_at: 35, created_at: 30 },
      { token_hash: 'ha', labels: '{"os":"linux"}', expires_at: 100, used_at: null, created_at: 10 },
      { token_hash: 'hb', labels: '{}', expires_at: 200, used_at: null, created_at: 20 },
    ])
    .execute();
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- as above
async function check(db: Kysely<any>, dialect: SqlDialect): Promise<void> {
  const m = registrationTokenIds(dialect);
  await m.up(db);
  const rows = (await db.selectFrom('registration_tokens').select(['id', 'token_hash', 'expires_at', 'used_at', 'revoked_at', 'created_at']).orderBy('id').execute()) as Record<string, unknown>[];
  // Numbered in creation order; everything else kept; none revoked.
  expect(rows.map((r) => [Number(r.id), r.token_hash, Number(r.expires_at), r.used_at === null ? null : Number(r.used_at), r.revoked_at, Number(r.created_at)])).toEqual([
    [1, 'ha', 100, null, null, 10],
    [2, 'hb', 200, null, null, 20],
    [3, 'hc', 300, 35, null, 30],
  ]);
  // New tokens continue the numbering; the hash stays unique.
  const next = await db.insertInto('registration_tokens').values({ token_hash: 'hd', labels: '{}', expires_at: 400, used_at: null, revoked_at: null, created_at: 40 }).returning('id').executeTakeFirstOrThrow();
  expect(Number(next.id)).toBe(4);
  await expect(db.insertInto('registration_tokens').values({ token_hash: 'ha', labels: '{}', expires_at: 1, used_at: null, revoked_at: null, created_at: 1 }).execute()).rejects.toThrow();
  // Down: a revoked token stays unusable under the old schema (kept as used at its revocation).
  await db.updateTable('registration_tokens').set({ revoked_at: 45 }).where('token_hash', '=', 'hb').execute();
  await m.down!(db);
  const old = (await db.selectFrom('registration_tokens').select(['token_hash', 'used_at']).orderBy('token_hash').execute()) as { token_hash: string; used_at: unknown }[];
  expect(old.map((r) => [r.token_hash, r.used_at === null ? null : Number(r.used_at)])).toEqual([
    ['ha', null],
    ['hb', 45],
    ['hc', 35],
    ['hd', null],
  ]);
}

const pgDb = await createTestDatabase();
afterAll(async () => {
  await pgDb?.drop();
});

describe('migration 0019: registration tokens get ids and revoked_at', () => {
  it('SQLite', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'flotilla-0019-'));
    const db = new Kysely<unknown>({ dialect: new SqliteDialect({ database: new BetterSqlite3(join(dir, 'x.db')) }) });
    try {
      await seed(db, 'sqlite');
      await check(db, 'sqlite');
    } finally {
      await db.destroy();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it.skipIf(pgDb === null)('PostgreSQL', async () => {
    const db = new Kysely<unknown>({ dialect: new PostgresDialect({ pool: new pg.Pool({ connectionString: pgDb!.url, max: 1 }) }) });
    try {
      await seed(db, 'postgres');
      await check(db, 'postgres');
    } finally {
      await db.destroy();
    }
  });
});
