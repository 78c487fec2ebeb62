import type { Kysely, Migration } from 'kysely';

/**
 * 0027 (issue 3): `tree_budgets.held_micros` and `job_budgets.held_micros`, the µ$ a budget holds
 * for the calls of jobs a top-up resumed that have not made their call yet (store/budget-holds.ts:
 * the holds of store/budget-resume.ts's rule, kept on the budget rows so that the gateway's
 * conditional reservation counts them in the same statement). Without them a running sibling
 * spent the room a top-up had given a paused job, which paused again at its first call (fresh
 * tester). 0 for every existing row: a database migrated while a resumed job holds room gets
 * its holds written at the next resume, hold end or refusal of the tree (budget-holds.ts
 * syncBudgetHolds). And `jobs.paused_need_call`: what a budget pause's need
 * (`paused_need_micros`, 0024) was worked out from, JSON (gateway/worst-case.ts NeedCall: model
 * and tokens), so the need is priced again when prices change (server/budget-reprice.ts); null
 * for pauses before it. Same definition on both engines (bigint: µ$ amounts pass 2^31).
 */
export function budgetHolds(): Migration {
  return {
    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations are untyped by design (Kysely docs)
    async up(db: Kysely<any>) {
      await db.schema.alterTable('tree_budgets').addColumn('held_micros', 'bigint', (c) => c.notNull().defaultTo(0)).execute();
      await db.schema.alterTable('job_budgets').addColumn('held_micros', 'bigint', (c) => c.notNull().defaultTo(0)).execute();
      await db.schema.alterTable('jobs').addColumn('paused_need_call', 'text').execute();
    },
    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- as above
    async down(db: Kysely<any>) {
      await db.schema.alterTable('jobs').dropColumn('paused_need_call').execute();
      await db.schema.alterTable('job_budgets').dropColumn('held_micros').execute();
      await db.schema.alterTable('tree_budgets').dropColumn('held_micros').execute();
    },
  };
}
