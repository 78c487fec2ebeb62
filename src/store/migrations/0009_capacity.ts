import { sql, type Migration } from 'kysely';
import type { SqlDialect } from '../schema.js';

/**
 * 0009 (issue 5, the fleet — binding labels and capacity kinds):
 * - runners.bound_labels: the labels of the registration token the runner was registered
 *   with. Binding: the runner's own labels (its `hello`) may only add keys not set here.
 *   Runners registered before 0009 get `{}` (nothing bound).
 * - runners.browser_slots: browser slots the runner offers (1–4, ≤ its parallel jobs), as of
 *   its last `hello`.
 * - runners.owner_capacity / owner_browser_slots: the owner's setting through
 *   `PATCH /api/runners/{id}`; when set it wins over what the runner offers. Null = not set.
 * - jobs.holds: what the job holds on its runner while assigned/running (`runner`,
 *   `workspace`, `browser`, `none`), written at claim from the agent's `holds`; null = not
 *   claimed yet (counted as `workspace`).
 * JSON is `text` on SQLite and `jsonb` on PostgreSQL, as in 0001.
 */
export function capacity(dialect: SqlDialect): Migration {
  const json = dialect === 'postgres' ? 'jsonb' : 'text';
  return {
    async up(db) {
      await db.schema.alterTable('runners').addColumn('bound_labels', sql.raw(json), (c) => c.notNull().defaultTo('{}')).execute();
      await db.schema.alterTable('runners').addColumn('browser_slots', 'integer', (c) => c.notNull().defaultTo(1)).execute();
      await db.schema.alterTable('runners').addColumn('owner_capacity', 'integer').execute();
      await db.schema.alterTable('runners').addColumn('owner_browser_slots', 'integer').execute();
      await db.schema.alterTable('jobs').addColumn('holds', 'text').execute();
    },
    async down(db) {
      await db.schema.alterTable('jobs').dropColumn('holds').execute();
      for (const c of ['owner_browser_slots', 'owner_capacity', 'browser_slots', 'bound_labels']) await db.schema.alterTable('runners').dropColumn(c).execute();
    },
  };
}
