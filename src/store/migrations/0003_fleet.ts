import type { Migration } from 'kysely';

/**
 * 0003 (issue 5, the fleet):
 * - runners: a hold (`hold_until` epoch ms, `hold_reason`, `hold_kind` `manual` or
 *   `provisioning`) that keeps the dispatcher from giving the runner queued jobs until it
 *   ends; `revoked_at` (epoch ms): a revoked runner's credential is refused for good.
 * - jobs: `retries_left`, how many more times a lost job goes back to the queue (from the
 *   agent's `retries`), decremented at each retry.
 * Same definition on both engines (bigint / text / integer).
 */
export function fleet(): Migration {
  return {
    async up(db) {
      await db.schema.alterTable('runners').addColumn('hold_until', 'bigint').execute();
      await db.schema.alterTable('runners').addColumn('hold_reason', 'text').execute();
      await db.schema.alterTable('runners').addColumn('hold_kind', 'text').execute();
      await db.schema.alterTable('runners').addColumn('revoked_at', 'bigint').execute();
      await db.schema.alterTable('jobs').addColumn('retries_left', 'integer', (c) => c.notNull().defaultTo(0)).execute();
    },
    async down(db) {
      await db.schema.alterTable('jobs').dropColumn('retries_left').execute();
      for (const c of ['revoked_at', 'hold_kind', 'hold_reason', 'hold_until']) await db.schema.alterTable('runners').dropColumn(c).execute();
    },
  };
}
