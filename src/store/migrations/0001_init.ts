import { sql, type Kysely, type Migration } from 'kysely';
import type { SqlDialect } from '../schema.js';

/**
 * 0001: the first schema, one definition for both engines. Only two per-dialect branches:
 * - ids: SQLite `integer primary key autoincrement` (never reused), PostgreSQL `serial`
 *   (int4, so `pg` returns numbers);
 * - JSON: SQLite `text`, PostgreSQL `jsonb` (so dispatch can use `<@`).
 * Times, money and token counts are `bigint` on both (SQLite: integer affinity, 64 bit).
 * Booleans are `integer` 0/1 on both.
 */
export function init(dialect: SqlDialect): Migration {
  const json = dialect === 'postgres' ? 'jsonb' : 'text';
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations are untyped by design (Kysely docs)
  const idColumn = (db: Kysely<any>, table: string) =>
    dialect === 'postgres'
      ? db.schema.createTable(table).addColumn('id', 'serial', (c) => c.primaryKey())
      : db.schema.createTable(table).addColumn('id', 'integer', (c) => c.primaryKey().autoIncrement());

  return {
    async up(db) {
      await idColumn(db, 'api_tokens')
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('role', 'text', (c) => c.notNull())
        .addColumn('token_hash', 'text', (c) => c.notNull().unique())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .execute();

      await db.schema
        .createTable('registration_tokens')
        .addColumn('token_hash', 'text', (c) => c.primaryKey())
        .addColumn('labels', sql.raw(json), (c) => c.notNull())
        .addColumn('expires_at', 'bigint', (c) => c.notNull())
        .addColumn('used_at', 'bigint')
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .execute();

      await idColumn(db, 'runners')
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('labels', sql.raw(json), (c) => c.notNull())
        .addColumn('capacity', 'integer', (c) => c.notNull())
        .addColumn('version', 'text')
        .addColumn('credential_hash', 'text', (c) => c.notNull().unique())
        .addColumn('connected', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('offline', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('last_heartbeat_at', 'bigint')
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .execute();

      await idColumn(db, 'jobs')
        .addColumn('parent_id', 'integer', (c) => c.references('jobs.id'))
        .addColumn('root_id', 'integer', (c) => c.notNull())
        .addColumn('agent', 'text', (c) => c.notNull())
        .addColumn('agent_version', 'text', (c) => c.notNull())
        .addColumn('input', sql.raw(json), (c) => c.notNull())
        .addColumn('status', 'text', (c) => c.notNull())
        .addColumn('end_reason', 'text')
        .addColumn('error', 'text')
        .addColumn('priority', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('selector', sql.raw(json), (c) => c.notNull())
        .addColumn('runner_id', 'integer', (c) => c.references('runners.id'))
        .addColumn('attempt', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('budget_micros', 'bigint', (c) => c.notNull())
        .addColumn('session_id', 'text')
        .addColumn('resume_session_id', 'text')
        .addColumn('result', sql.raw(json))
        .addColumn('token_hash', 'text')
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('assigned_at', 'bigint')
        .addColumn('started_at', 'bigint')
        .addColumn('finished_at', 'bigint')
        .execute();
      // Dispatch: queued jobs by priority desc, then oldest first.
      await db.schema.createIndex('jobs_dispatch').on('jobs').columns(['status', 'priority desc', 'id']).execute();
      // Listing (newest first, optionally by status or agent) and lookups.
      await db.schema.createIndex('jobs_status_id').on('jobs').columns(['status', 'id']).execute();
      await db.schema.createIndex('jobs_agent_id').on('jobs').columns(['agent', 'id']).execute();
      await db.schema.createIndex('jobs_root').on('jobs').column('root_id').execute();
      await db.schema.createIndex('jobs_parent').on('jobs').column('parent_id').execute();
      await db.schema.createIndex('jobs_runner_status').on('jobs').columns(['runner_id', 'status']).execute();
      await db.schema.createIndex('jobs_token_hash').on('jobs').column('token_hash').unique().where(sql<boolean>`token_hash is not null`).execute();

      await db.schema
        .createTable('job_events')
        .addColumn('job_id', 'integer', (c) => c.notNull().references('jobs.id'))
        .addColumn('seq', 'integer', (c) => c.notNull())
        .addColumn('attempt', 'integer', (c) => c.notNull())
        .addColumn('rseq', 'integer')
        .addColumn('type', 'text', (c) => c.notNull())
        .addColumn('data', sql.raw(json), (c) => c.notNull())
        .addColumn('at', 'text', (c) => c.notNull())
        .addPrimaryKeyConstraint('job_events_pk', ['job_id', 'seq'])
        .execute();
      await db.schema
        .createIndex('job_events_rseq')
        .on('job_events')
        .columns(['job_id', 'attempt', 'rseq'])
        .unique()
        .where(sql<boolean>`rseq is not null`)
        .execute();

      await idColumn(db, 'model_calls')
        .addColumn('job_id', 'integer', (c) => c.notNull().references('jobs.id'))
        .addColumn('attempt', 'integer', (c) => c.notNull())
        .addColumn('provider', 'text', (c) => c.notNull())
        .addColumn('model', 'text', (c) => c.notNull())
        .addColumn('api', 'text', (c) => c.notNull())
        .addColumn('streamed', 'integer', (c) => c.notNull())
        .addColumn('http_status', 'integer', (c) => c.notNull())
        .addColumn('input_tokens', 'bigint', (c) => c.notNull())
        .addColumn('output_tokens', 'bigint', (c) => c.notNull())
        .addColumn('cache_read_tokens', 'bigint', (c) => c.notNull())
        .addColumn('cache_write_tokens', 'bigint', (c) => c.notNull())
        .addColumn('usage_known', 'integer', (c) => c.notNull())
        .addColumn('cost_micros', 'bigint', (c) => c.notNull())
        .addColumn('started_at', 'bigint', (c) => c.notNull())
        .addColumn('duration_ms', 'bigint', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('model_calls_job').on('model_calls').column('job_id').execute();
    },
    async down(db) {
      for (const t of ['model_calls', 'job_events', 'jobs', 'runners', 'registration_tokens', 'api_tokens']) {
        await db.schema.dropTable(t).ifExists().execute();
      }
    },
  };
}
