import type { Kysely, Migration } from 'kysely';

/**
 * 0012 (issue 7, idle timeout): `tasks.slot_until`, epoch ms until which a task whose turn
 * ended keeps its runner slot (`runner_id`) for its next turn: "after each reply the task
 * keeps its runner slot for the agent's idle time, then releases it". Null: no slot held
 * (never ran, suspended, completed, or the idle time was cleared). The dispatcher counts a
 * held slot as taken by the task's workspace (`workspace_job_id`) until it passes.
 */
export function taskSlots(): Migration {
  return {
    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations are untyped by design (Kysely docs)
    async up(db: Kysely<any>) {
      await db.schema.alterTable('tasks').addColumn('slot_until', 'bigint').execute();
    },
    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- as above
    async down(db: Kysely<any>) {
      await db.schema.alterTable('tasks').dropColumn('slot_until').execute();
    },
  };
}
