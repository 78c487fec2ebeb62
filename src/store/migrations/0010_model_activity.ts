import type { Migration } from 'kysely';

/**
 * 0010 (issue 4, idle limit counts model calls): `model_call_activity`, one row per job
 * attempt that called the gateway: `in_flight` model calls now (incremented when a call's
 * budget is reserved, decremented when it is settled) and `last_at` (epoch ms, server clock)
 * when a call last started or ended. Every gateway replica writes it; the replica holding the
 * runner's WebSocket reads it (runner hub, heartbeats). Same definition on both engines.
 */
export function modelActivity(): Migration {
  return {
    async up(db) {
      await db.schema
        .createTable('model_call_activity')
        .addColumn('job_id', 'integer', (c) => c.notNull())
        .addColumn('attempt', 'integer', (c) => c.notNull())
        .addColumn('in_flight', 'integer', (c) => c.notNull())
        .addColumn('last_at', 'bigint', (c) => c.notNull())
        .addPrimaryKeyConstraint('model_call_activity_pk', ['job_id', 'attempt'])
        .execute();
    },
    async down(db) {
      await db.schema.dropTable('model_call_activity').ifExists().execute();
    },
  };
}
