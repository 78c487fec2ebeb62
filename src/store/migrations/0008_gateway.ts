import type { Kysely, Migration } from 'kysely';
import type { SqlDialect } from '../schema.js';

/**
 * 0008 (issue 3, gateway gaps):
 * - `budget_reservations`: one row per model call in flight, holding `micros` of its tree's
 *   `tree_budgets.reserved_micros` until it is settled (row deleted, cost charged) or, when its
 *   gateway process died mid-call, until the sweeper releases it after `expires_at` (epoch ms).
 *   Whoever deletes the row gives the micros back, so a reservation is released exactly once.
 * - `model_routes`: model name pattern (exact name, or a glob with `*`; `*` alone is the
 *   default) → provider, set through the API so every replica routes alike.
 * - `model_prices`: price overrides per model name (USD per million tokens, JSON
 *   `{input, output, cacheWrite5m, cacheWrite1h, cacheRead}`), over data/prices.json.
 */
export function gateway(dialect: SqlDialect): Migration {
  return {
    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations are untyped by design (Kysely docs)
    async up(db: Kysely<any>) {
      const base =
        dialect === 'postgres'
          ? db.schema.createTable('budget_reservations').addColumn('id', 'bigserial', (c) => c.primaryKey())
          : db.schema.createTable('budget_reservations').addColumn('id', 'integer', (c) => c.primaryKey().autoIncrement());
      await base
        .addColumn('root_id', 'integer', (c) => c.notNull().references('tree_budgets.root_id'))
        .addColumn('micros', 'bigint', (c) => c.notNull())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('expires_at', 'bigint', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('budget_reservations_expires').on('budget_reservations').column('expires_at').execute();
      await db.schema
        .createTable('model_routes')
        .addColumn('pattern', 'text', (c) => c.primaryKey())
        .addColumn('provider', 'text', (c) => c.notNull())
        .addColumn('updated_at', 'bigint', (c) => c.notNull())
        .execute();
      await db.schema
        .createTable('model_prices')
        .addColumn('model', 'text', (c) => c.primaryKey())
        .addColumn('price', 'text', (c) => c.notNull())
        .addColumn('updated_at', 'bigint', (c) => c.notNull())
        .execute();
    },
    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- as above
    async down(db: Kysely<any>) {
      await db.schema.dropTable('model_prices').ifExists().execute();
      await db.schema.dropTable('model_routes').ifExists().execute();
      await db.schema.dropIndex('budget_reservations_expires').ifExists().execute();
      await db.schema.dropTable('budget_reservations').ifExists().execute();
    },
  };
}
