import type { Kysely, Migration } from 'kysely';

/**
 * 0026 (issue 3, "budgets per job tree, and per task"): `tasks.budget_micros`, the budget of a
 * task's turns together in µ$ (null: none; each turn is then a tree with its agent's
 * `defaultBudgetUsd`, as before), and an index on `task_turns.job_id` (0016) so that the job
 * tree of a turn finds its task (a top-up of that tree raises the task's budget too). Same
 * definition on both engines (bigint: µ$ amounts pass 2^31).
 */
export function taskBudget(): Migration {
  return {
    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations are untyped by design (Kysely docs)
    async up(db: Kysely<any>) {
      await db.schema.alterTable('tasks').addColumn('budget_micros', 'bigint').execute();
      await db.schema.createIndex('task_turns_job').on('task_turns').column('job_id').execute();
    },
    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- as above
    async down(db: Kysely<any>) {
      await db.schema.dropIndex('task_turns_job').execute();
      await db.schema.alterTable('tasks').dropColumn('budget_micros').execute();
    },
  };
}
