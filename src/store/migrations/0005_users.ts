import { sql, type Kysely, type Migration } from 'kysely';
import type { SqlDialect } from '../schema.js';

/**
 * 0005 (issue 8, the dashboard): people who sign in, and their cookie sessions.
 * - `users`: a name (unique), a role (`admin` | `member`), a scrypt password hash (null for a
 *   user who signs in only through an identity provider: `oidc_issuer` + `oidc_subject`, set
 *   by the later OIDC sign-in; unique together when present), disabled flag, created time.
 * - `sessions`: the SHA-256 hash of the session cookie value (the value itself is never
 *   stored), its user, created/expires/last-seen times (epoch ms).
 * - two ledger indexes: jobs by runner newest first, and by agent+status newest first (the
 *   dashboard's filters; listing already has status+id and agent+id).
 */
export function users(dialect: SqlDialect): Migration {
  return {
    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations are untyped by design (Kysely docs)
    async up(db: Kysely<any>) {
      const base =
        dialect === 'postgres'
          ? db.schema.createTable('users').addColumn('id', 'serial', (c) => c.primaryKey())
          : db.schema.createTable('users').addColumn('id', 'integer', (c) => c.primaryKey().autoIncrement());
      await base
        .addColumn('name', 'text', (c) => c.notNull().unique())
        .addColumn('role', 'text', (c) => c.notNull())
        .addColumn('password_hash', 'text')
        .addColumn('oidc_issuer', 'text')
        .addColumn('oidc_subject', 'text')
        .addColumn('disabled', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .execute();
      await db.schema
        .createIndex('users_oidc')
        .on('users')
        .columns(['oidc_issuer', 'oidc_subject'])
        .unique()
        .where(sql<boolean>`oidc_subject is not null`)
        .execute();
      await db.schema
        .createTable('sessions')
        .addColumn('token_hash', 'text', (c) => c.primaryKey())
        .addColumn('user_id', 'integer', (c) => c.notNull().references('users.id').onDelete('cascade'))
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('expires_at', 'bigint', (c) => c.notNull())
        .addColumn('last_seen_at', 'bigint', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('sessions_user').on('sessions').column('user_id').execute();
      await db.schema.createIndex('jobs_runner_id').on('jobs').columns(['runner_id', 'id']).execute();
      await db.schema.createIndex('jobs_agent_status_id').on('jobs').columns(['agent', 'status', 'id']).execute();
    },
    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- as above
    async down(db: Kysely<any>) {
      await db.schema.dropIndex('jobs_agent_status_id').ifExists().execute();
      await db.schema.dropIndex('jobs_runner_id').ifExists().execute();
      await db.schema.dropTable('sessions').ifExists().execute();
      await db.schema.dropTable('users').ifExists().execute();
    },
  };
}
