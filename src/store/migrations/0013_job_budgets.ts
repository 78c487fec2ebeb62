import type { Kysely, Migration } from 'kysely';

/**
 * 0013 (issue 6, child budget sub-limits):
 * - `job_budgets`: one row per child job that has a sub-limit (`jobs.budget_micros > 0` on a
 *   job with a parent), created lazily on its first model call or top-up: `limit_micros`,
 *   `spent_micros`, `reserved_micros` (integer micro-dollars), kept as `tree_budgets` keeps
 *   the tree's (the sub-limited job and all its descendants charge it).
 * - `budget_reservations.job_ids`: comma-separated ids of the `job_budgets` rows the
 *   reservation also holds `micros` of (null: the tree's row only), so settle and the sweeper
 *   give back exactly what was reserved.
 */
export function jobBudgets(): Migration {
  return {
    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations are untyped by design (Kysely docs)
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('job_budgets')
        .addColumn('job_id', 'integer', (c) => c.primaryKey().references('jobs.id'))
        .addColumn('root_id', 'integer', (c) => c.notNull())
        .addColumn('limit_micros', 'bigint', (c) => c.notNull())
        .addColumn('spent_micros', 'bigint', (c) => c.notNull())
        .addColumn('reserved_micros', 'bigint', (c) => c.notNull())
        .addColumn('updated_at', 'bigint', (c) => c.notNull())
        .execute();
      await db.schema.alterTable('budget_reservations').addColumn('job_ids', 'text').execute();
    },
    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- as above
    async down(db: Kysely<any>) {
      await db.schema.alterTable('budget_reservations').dropColumn('job_ids').execute();
      await db.schema.dropTable('job_budgets').ifExists().execute();
    },
  };
}
