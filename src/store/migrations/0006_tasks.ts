import { sql, type Kysely, type Migration } from 'kysely';
import type { SqlDialect } from '../schema.js';

/**
 * 0006 (issue 7, tasks and events):
 * - `tasks`: a durable work item of one agent: status, input, coalescing window (ms), the job
 *   running its turn, the job whose workspace every turn reuses, the runner and harness
 *   session to resume, turn counter, coalescing window end and trailing-wake due time (epoch
 *   ms), newest event time seen (stale events never move it backwards), error.
 * - `task_keys`: resource keys a task owns; unique among active rows (a completed task
 *   releases its keys, `active` = 0, and keeps them for history and reopening).
 * - `task_prompts`: queued prompts; `turn` is set when a turn takes them.
 * - `receivers`: webhook endpoints. `secret` is kept as is (HMAC needs it) and never returned
 *   after creation; `token_hash` is the SHA-256 of a bearer token.
 * - `deliveries`: (receiver, delivery id) unique: the same delivery is processed once.
 * - `task_events`: what woke or will wake a task (task_id null: unmatched); `turn` set when
 *   a turn carries it to the agent.
 */
export function tasks(dialect: SqlDialect): Migration {
  const json = dialect === 'postgres' ? 'jsonb' : 'text';
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations are untyped by design (Kysely docs)
  const idCol = (db: Kysely<any>, table: string) =>
    dialect === 'postgres'
      ? db.schema.createTable(table).addColumn('id', 'serial', (c) => c.primaryKey())
      : db.schema.createTable(table).addColumn('id', 'integer', (c) => c.primaryKey().autoIncrement());
  return {
    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- as above
    async up(db: Kysely<any>) {
      await idCol(db, 'tasks')
        .addColumn('agent', 'text', (c) => c.notNull())
        .addColumn('title', 'text', (c) => c.notNull())
        .addColumn('input', sql.raw(json), (c) => c.notNull())
        .addColumn('status', 'text', (c) => c.notNull())
        .addColumn('coalesce_ms', 'bigint', (c) => c.notNull())
        .addColumn('current_job_id', 'integer')
        .addColumn('workspace_job_id', 'integer')
        .addColumn('runner_id', 'integer')
        .addColumn('session_id', 'text')
        .addColumn('turn', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('window_until', 'bigint')
        .addColumn('trailing_due_at', 'bigint')
        .addColumn('last_event_at', 'bigint')
        .addColumn('error', 'text')
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('updated_at', 'bigint', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('tasks_status_id').on('tasks').columns(['status', 'id']).execute();
      await db.schema.createIndex('tasks_trailing_due').on('tasks').column('trailing_due_at').where(sql<boolean>`trailing_due_at is not null`).execute();
      await db.schema.createIndex('tasks_current_job').on('tasks').column('current_job_id').where(sql<boolean>`current_job_id is not null`).execute();
      await db.schema
        .createTable('task_keys')
        .addColumn('task_id', 'integer', (c) => c.notNull().references('tasks.id').onDelete('cascade'))
        .addColumn('key', 'text', (c) => c.notNull())
        .addColumn('active', 'integer', (c) => c.notNull())
        .addPrimaryKeyConstraint('task_keys_pk', ['task_id', 'key'])
        .execute();
      await db.schema.createIndex('task_keys_active_key').on('task_keys').column('key').unique().where(sql<boolean>`active = 1`).execute();
      await db.schema.createIndex('task_keys_key').on('task_keys').columns(['key', 'task_id']).execute();
      await idCol(db, 'task_prompts')
        .addColumn('task_id', 'integer', (c) => c.notNull().references('tasks.id').onDelete('cascade'))
        .addColumn('text', 'text', (c) => c.notNull())
        .addColumn('turn', 'integer')
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('task_prompts_task_turn').on('task_prompts').columns(['task_id', 'turn', 'id']).execute();
      await idCol(db, 'receivers')
        .addColumn('name', 'text', (c) => c.notNull().unique())
        .addColumn('provider', 'text', (c) => c.notNull())
        .addColumn('auth', 'text', (c) => c.notNull())
        .addColumn('secret', 'text')
        .addColumn('token_hash', 'text')
        .addColumn('key_expr', 'text')
        .addColumn('summary_expr', 'text')
        .addColumn('fallback_task_id', 'integer')
        .addColumn('policies', sql.raw(json), (c) => c.notNull())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .execute();
      await idCol(db, 'deliveries')
        .addColumn('receiver_id', 'integer', (c) => c.notNull().references('receivers.id').onDelete('cascade'))
        .addColumn('delivery_id', 'text', (c) => c.notNull())
        .addColumn('received_at', 'bigint', (c) => c.notNull())
        .addUniqueConstraint('deliveries_receiver_delivery', ['receiver_id', 'delivery_id'])
        .execute();
      await idCol(db, 'task_events')
        .addColumn('task_id', 'integer', (c) => c.references('tasks.id').onDelete('cascade'))
        .addColumn('receiver_id', 'integer', (c) => c.references('receivers.id').onDelete('set null'))
        .addColumn('key', 'text')
        .addColumn('kind', 'text', (c) => c.notNull())
        .addColumn('actor', 'text')
        .addColumn('summary', 'text', (c) => c.notNull())
        .addColumn('occurred_at', 'bigint', (c) => c.notNull())
        .addColumn('received_at', 'bigint', (c) => c.notNull())
        .addColumn('turn', 'integer')
        .execute();
      await db.schema.createIndex('task_events_task_turn').on('task_events').columns(['task_id', 'turn', 'id']).execute();
    },
    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- as above
    async down(db: Kysely<any>) {
      for (const t of ['task_events', 'deliveries', 'receivers', 'task_prompts', 'task_keys', 'tasks']) await db.schema.dropTable(t).ifExists().execute();
    },
  };
}
