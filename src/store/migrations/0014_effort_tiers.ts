import type { Kysely, Migration } from 'kysely';

/**
 * 0014 (issue 8, Settings: effort tiers): `effort_tiers`, the tiers the account defines (a
 * name → model + effort level). A stored tier of a built-in name (`max`, `high`, `medium`)
 * redefines it for this account. `updated_at`: epoch ms, server clock.
 */
export function effortTiers(): Migration {
  return {
    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations are untyped by design (Kysely docs)
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('effort_tiers')
        .addColumn('name', 'text', (c) => c.primaryKey())
        .addColumn('model', 'text', (c) => c.notNull())
        .addColumn('level', 'text', (c) => c.notNull())
        .addColumn('updated_at', 'bigint', (c) => c.notNull())
        .execute();
    },
    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- as above
    async down(db: Kysely<any>) {
      await db.schema.dropTable('effort_tiers').ifExists().execute();
    },
  };
}
