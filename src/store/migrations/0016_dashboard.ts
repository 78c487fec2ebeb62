import { sql, type Kysely, type Migration } from 'kysely';
import type { SqlDialect } from '../schema.js';

/**
 * 0016 (issue 8, the dashboard's history views):
 * - `runner_events`: what happened to a runner over time (connected, disconnected, went
 *   offline, held, hold extended, resumed, capacity set, revoked), newest read first; `job_id`
 *   when the event concerns a job. The runners table keeps only the current state.
 * - `task_turns`: which job ran each turn of a task (the task row keeps only the current job),
 *   so the conversation view can put each turn's replies after what woke it. Backfilled from
 *   the jobs the task engine made before this migration (their input carries `taskId` and
 *   `taskTurn`, server/tasks/engine.ts).
 * - `settings`: account settings set through the API (key → JSON text), e.g. the default
 *   effort tier (`effort.defaultTier`), which wins over the server's FLOTILLA_DEFAULT_EFFORT.
 * Times are epoch ms, server clock.
 */
export function dashboard(dialect: SqlDialect): Migration {
  return {
    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations are untyped by design (Kysely docs)
    async up(db: Kysely<any>) {
      const base =
        dialect === 'postgres'
          ? db.schema.createTable('runner_events').addColumn('id', 'serial', (c) => c.primaryKey())
          : db.schema.createTable('runner_events').addColumn('id', 'integer', (c) => c.primaryKey().autoIncrement());
      await base
        .addColumn('runner_id', 'integer', (c) => c.notNull().references('runners.id').onDelete('cascade'))
        .addColumn('kind', 'text', (c) => c.notNull())
        .addColumn('text', 'text', (c) => c.notNull())
        .addColumn('job_id', 'integer')
        .addColumn('at', 'bigint', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('runner_events_runner_id').on('runner_events').columns(['runner_id', 'id']).execute();
      await db.schema
        .createTable('task_turns')
        .addColumn('task_id', 'integer', (c) => c.notNull().references('tasks.id').onDelete('cascade'))
        .addColumn('turn', 'integer', (c) => c.notNull())
        .addColumn('job_id', 'integer', (c) => c.notNull())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addPrimaryKeyConstraint('task_turns_pk', ['task_id', 'turn'])
        .execute();
      await db.schema
        .createTable('settings')
        .addColumn('key', 'text', (c) => c.primaryKey())
        .addColumn('value', 'text', (c) => c.notNull())
        .addColumn('updated_at', 'bigint', (c) => c.notNull())
        .execute();
      // Backfill: the turns of existing tasks, from the input the task engine gave their jobs
      // (the newest job of a (task, turn) wins; jobs of deleted tasks are left out).
      if (dialect === 'postgres') {
        await sql`insert into task_turns (task_id, turn, job_id, created_at)
          select distinct on (t, n) t, n, id, created_at from (
            select (input->>'taskId')::int as t, (input->>'taskTurn')::int as n, id, created_at from jobs
            where jsonb_typeof(input->'taskId') = 'number' and jsonb_typeof(input->'taskTurn') = 'number'
              and (input->>'taskId') ~ '^[0-9]{1,9}$' and (input->>'taskTurn') ~ '^[0-9]{1,9}$'
          ) j where exists (select 1 from tasks where tasks.id = j.t)
          order by t, n, id desc`.execute(db);
      } else {
        await sql`insert or replace into task_turns (task_id, turn, job_id, created_at)
          select t, n, id, created_at from (
            select json_extract(input, '$.taskId') as t, json_extract(input, '$.taskTurn') as n, id, created_at from jobs
            where json_valid(input) and json_type(input, '$.taskId') = 'integer' and json_type(input, '$.taskTurn') = 'integer'
          ) j where exists (select 1 from tasks where tasks.id = j.t)
          order by id`.execute(db);
      }
    },
    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- as above
    async down(db: Kysely<any>) {
      for (const t of ['settings', 'task_turns', 'runner_events']) await db.schema.dropTable(t).ifExists().execute();
    },
  };
}
