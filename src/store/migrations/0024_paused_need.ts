import type { Migration } from 'kysely';

/**
 * 0024 (issue 6): `jobs.paused_need_micros`, the worst case in µ$ of the model call whose
 * refusal paused the job for budget, written by the pause (store/budget-pause.ts pauseJobForBudget)
 * and read by the resume rule (store/budget-resume.ts), so the rule no longer depends on the
 * pause reason's wording. Null for jobs not paused for budget and for jobs paused before this
 * migration (the rule then reads the amount from the reason's text, as before). Same
 * definition on both engines (bigint: µ$ amounts pass 2^31).
 */
export function pausedNeed(): Migration {
  return {
    async up(db) {
      await db.schema.alterTable('jobs').addColumn('paused_need_micros', 'bigint').execute();
    },
    async down(db) {
      await db.schema.alterTable('jobs').dropColumn('paused_need_micros').execute();
    },
  };
}
