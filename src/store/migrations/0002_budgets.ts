import { sql, type Kysely, type Migration } from 'kysely';
import type { SqlDialect } from '../schema.js';

/**
 * 0002 (issue 3, gateway budgets and metering):
 * - `tree_budgets`: one row per job tree (keyed by the root job id): its dollar limit and the
 *   micro-dollars spent (settled calls) and reserved (calls in flight, at their worst case).
 *   A call reserves with one conditional UPDATE (`reserved + spent + worst <= limit`), so the
 *   check and the reservation are one statement on both engines (see store/budgets.ts).
 * - `model_calls` gains `cost_nanos` (the exact cost in nano-dollars; `cost_micros` stays the
 *   rounded figure budgets and totals use), `runner_id` (the runner whose job made the call,
 *   for rollups per runner) and `refused` (the reason the gateway refused the call without
 *   asking the upstream: `budget`, `invalid_request`, `unknown_model`, ...; null = forwarded).
 */
export function budgets(_dialect: SqlDialect): Migration {
  return {
    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations are untyped by design (Kysely docs)
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('tree_budgets')
        .addColumn('root_id', 'integer', (c) => c.primaryKey().references('jobs.id'))
        .addColumn('limit_micros', 'bigint', (c) => c.notNull())
        .addColumn('spent_micros', 'bigint', (c) => c.notNull().defaultTo(0))
        .addColumn('reserved_micros', 'bigint', (c) => c.notNull().defaultTo(0))
        .addColumn('updated_at', 'bigint', (c) => c.notNull())
        .execute();
      await db.schema.alterTable('model_calls').addColumn('cost_nanos', 'bigint', (c) => c.notNull().defaultTo(0)).execute();
      await db.schema.alterTable('model_calls').addColumn('runner_id', 'integer').execute();
      await db.schema.alterTable('model_calls').addColumn('refused', 'text').execute();
      await db.schema.createIndex('model_calls_started').on('model_calls').column('started_at').execute();
      // Existing rows: their exact cost is their rounded one.
      await sql`update model_calls set cost_nanos = cost_micros * 1000`.execute(db);
    },
    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- see above
    async down(db: Kysely<any>) {
      await db.schema.dropIndex('model_calls_started').ifExists().execute();
      await db.schema.alterTable('model_calls').dropColumn('refused').execute();
      await db.schema.alterTable('model_calls').dropColumn('runner_id').execute();
      await db.schema.alterTable('model_calls').dropColumn('cost_nanos').execute();
      await db.schema.dropTable('tree_budgets').ifExists().execute();
    },
  };
}
