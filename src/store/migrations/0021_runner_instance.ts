import type { Kysely, Migration } from 'kysely';

/**
 * 0021 (issue "never run a job twice": one runner credential used by two runner processes):
 * which process holds each runner's connection, so every server replica refuses a second one.
 * - runners.instance: the `hello.instance` of the process last accepted (null: an older runner
 *   without one, or never connected);
 * - runners.instance_conn: the server-side id of the connection holding the runner now (null:
 *   none; cleared when that connection closes); heartbeats count only from it;
 * - runners.instance_since: when that process first connected (epoch ms; kept across its
 *   reconnects), shown to a refused second process.
 */
export function runnerInstance(): Migration {
  return {
    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations are untyped by design (Kysely docs)
    async up(db: Kysely<any>) {
      await db.schema.alterTable('runners').addColumn('instance', 'text').execute();
      await db.schema.alterTable('runners').addColumn('instance_conn', 'text').execute();
      await db.schema.alterTable('runners').addColumn('instance_since', 'bigint').execute();
    },
    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- as above
    async down(db: Kysely<any>) {
      for (const c of ['instance_since', 'instance_conn', 'instance']) await db.schema.alterTable('runners').dropColumn(c).execute();
    },
  };
}
