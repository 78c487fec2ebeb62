import type { Migration } from 'kysely';

/**
 * 0023 (multi-replica safety): `jobs.unstarted_requeues`, how many times the job went back to
 * the queue because its runner never started it (no retry used each time: store/unstarted.ts);
 * at MAX_UNSTARTED_REQUEUES the next such time fails it (`runner_never_started`). Existing jobs
 * start at 0. Same definition on both engines.
 */
export function unstartedRequeues(): Migration {
  return {
    async up(db) {
      await db.schema.alterTable('jobs').addColumn('unstarted_requeues', 'integer', (c) => c.notNull().defaultTo(0)).execute();
    },
    async down(db) {
      await db.schema.alterTable('jobs').dropColumn('unstarted_requeues').execute();
    },
  };
}
