import type { Kysely, Migration } from 'kysely';

/**
 * 0015 (issue 7, webhook dedup): `deliveries.task_id`, the task the delivery's event went to
 * (null: unmatched, or stored before 0015), so that a repeat of the delivery answers the same
 * task as the first one did. No foreign key: the id only says where the first delivery went,
 * and a key check on every insert would cost the ingest path a lookup per row for nothing.
 */
export function deliveryTask(): Migration {
  return {
    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations are untyped by design (Kysely docs)
    async up(db: Kysely<any>) {
      await db.schema.alterTable('deliveries').addColumn('task_id', 'integer').execute();
    },
    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- as above
    async down(db: Kysely<any>) {
      await db.schema.alterTable('deliveries').dropColumn('task_id').execute();
    },
  };
}
