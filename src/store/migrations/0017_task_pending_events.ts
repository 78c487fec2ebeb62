import { sql, type Kysely, type Migration } from 'kysely';

/**
 * 0017 (issue 7 throughput): `tasks.pending_events`, the number of the task's events no turn
 * has taken yet (`task_events` rows with this task_id and turn null), kept in the same
 * statements that add, take or put back events (receivers.ts, ingest-sql-*.ts,
 * tasks-turns.ts). It replaces a `count(*)` over those rows that every webhook batch ran for
 * each task it touched: that count grew with the coalescing backlog (at 2,000 deliveries/s
 * over a 180 s window a busy task has thousands of pending events), a read per batch whose
 * cost rose with the load. Filled from the events already stored.
 */
export function taskPendingEvents(): Migration {
  return {
    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations are untyped by design (Kysely docs)
    async up(db: Kysely<any>) {
      await db.schema.alterTable('tasks').addColumn('pending_events', 'integer', (c) => c.notNull().defaultTo(0)).execute();
      await sql`UPDATE tasks SET pending_events = (SELECT count(*) FROM task_events e WHERE e.task_id = tasks.id AND e.turn IS NULL)`.execute(db);
    },
    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- as above
    async down(db: Kysely<any>) {
      await db.schema.alterTable('tasks').dropColumn('pending_events').execute();
    },
  };
}
