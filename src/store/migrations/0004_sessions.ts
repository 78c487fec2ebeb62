import type { Migration } from 'kysely';

/**
 * 0004 (issue 4, sessions that resume):
 * - jobs.pinned_runner_id: only this runner may claim the job (a job that resumes a session
 *   needs the workspace and harness HOME that live on that runner); null = any runner.
 * - jobs.workspace_job_id: the job whose workspace (and harness HOME) the job continues in;
 *   null = its own.
 * - jobs.effort_tier: the effort tier the run asked for (overrides the agent's); null = none.
 * Same definition on both engines (integer, text).
 */
export function sessions(): Migration {
  return {
    async up(db) {
      await db.schema.alterTable('jobs').addColumn('pinned_runner_id', 'integer').execute();
      await db.schema.alterTable('jobs').addColumn('workspace_job_id', 'integer').execute();
      await db.schema.alterTable('jobs').addColumn('effort_tier', 'text').execute();
    },
    async down(db) {
      await db.schema.alterTable('jobs').dropColumn('effort_tier').execute();
      await db.schema.alterTable('jobs').dropColumn('workspace_job_id').execute();
      await db.schema.alterTable('jobs').dropColumn('pinned_runner_id').execute();
    },
  };
}
