import { sql, type Kysely, type Migration } from 'kysely';

/**
 * 0018 (issue 3, budget pauses): a `paused` job whose `finished_at` is null now holds its
 * runner slot until its runner reports the stopped process gone (core/job-state.ts
 * pausedHoldsRunner, server/paused-exit.ts). Jobs paused before this rule have a null
 * `finished_at` and no runner that will ever report them: they are marked released at the
 * migration's time, else each would hold a slot of its runner until the hub's timeout.
 */
export function pausedReleased(): Migration {
  return {
    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations are untyped by design (Kysely docs)
    async up(db: Kysely<any>) {
      await sql`UPDATE jobs SET finished_at = ${Date.now()} WHERE status = 'paused' AND finished_at IS NULL`.execute(db);
    },
    // Nothing to undo: released pauses stay released under the old rule too (it never read finished_at of a paused job).
    async down() {},
  };
}
