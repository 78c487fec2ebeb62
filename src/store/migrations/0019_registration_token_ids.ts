import { sql, type Kysely, type Migration } from 'kysely';
import type { SqlDialect } from '../schema.js';

/**
 * 0019 (issue 5, registration tokens an admin can list and revoke): `registration_tokens` gets
 * an `id` (so a token can be named without its secret: `flotilla runners token list|revoke`)
 * and `revoked_at` (epoch ms; a revoked token is no longer traded for a runner credential).
 * The hash stays unique (consume looks it up). SQLite cannot add an autoincrement key to a
 * table, so on both engines the table is rebuilt: existing tokens keep their hash, labels and
 * times, numbered in the order they were created.
 */
export function registrationTokenIds(dialect: SqlDialect): Migration {
  const json = dialect === 'postgres' ? 'jsonb' : 'text';
  return {
    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations are untyped by design (Kysely docs)
    async up(db: Kysely<any>) {
      const base =
        dialect === 'postgres'
          ? db.schema.createTable('registration_tokens_0019').addColumn('id', 'serial', (c) => c.primaryKey())
          : db.schema.createTable('registration_tokens_0019').addColumn('id', 'integer', (c) => c.primaryKey().autoIncrement());
      await base
        .addColumn('token_hash', 'text', (c) => c.notNull().unique())
        .addColumn('labels', sql.raw(json), (c) => c.notNull())
        .addColumn('expires_at', 'bigint', (c) => c.notNull())
        .addColumn('used_at', 'bigint')
        .addColumn('revoked_at', 'bigint')
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .execute();
      await sql`insert into registration_tokens_0019 (token_hash, labels, expires_at, used_at, revoked_at, created_at)
        select token_hash, labels, expires_at, used_at, null, created_at from registration_tokens
        order by created_at, token_hash`.execute(db);
      await db.schema.dropTable('registration_tokens').execute();
      await db.schema.alterTable('registration_tokens_0019').renameTo('registration_tokens').execute();
    },
    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- as above
    async down(db: Kysely<any>) {
      await db.schema
        .createTable('registration_tokens_0018')
        .addColumn('token_hash', 'text', (c) => c.primaryKey())
        .addColumn('labels', sql.raw(json), (c) => c.notNull())
        .addColumn('expires_at', 'bigint', (c) => c.notNull())
        .addColumn('used_at', 'bigint')
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .execute();
      // A revoked token must stay unusable under the old schema: it is kept as used at its revocation.
      await sql`insert into registration_tokens_0018 (token_hash, labels, expires_at, used_at, created_at)
        select token_hash, labels, expires_at, coalesce(used_at, revoked_at), created_at from registration_tokens`.execute(db);
      await db.schema.dropTable('registration_tokens').execute();
      await db.schema.alterTable('registration_tokens_0018').renameTo('registration_tokens').execute();
    },
  };
}
