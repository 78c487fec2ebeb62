import type { Kysely, Migration } from 'kysely';

/**
 * 0028 (issue 3): `jobs.resumed_at`, ms since the epoch: when a top-up last resumed the job into
 * the room of its refused call (store/budget-pause.ts), the start of the hold it then keeps on its
 * tree's budgets (store/budget-holds.ts). A resumed job that cannot start (its session's runner
 * offline or on hold) held that room for as long as it waited, keeping its paused siblings
 * paused (fresh tester); with the time of the resume, the budget sweep lets such a hold lapse
 * (budget-holds.ts lapseBudgetHolds, server/budget-sweep.ts). Null for jobs never resumed, and
 * for jobs resumed before it: their holds lapse only once they are resumed again. And
 * `jobs.hold_admitted_attempt`: the attempt whose first call the gateway admitted while the job
 * held room; from there that call's reservation keeps the room against other calls (the hold
 * leaves the budget rows' `held_micros`, so it is not counted twice while the call is in flight),
 * while the resume rule goes on counting the need until the call is recorded (budget-holds.ts
 * endHoldAtReservation). Null when none. Same definition on both engines (bigint: ms pass 2^31).
 */
export function budgetHoldLapse(): Migration {
  return {
    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations are untyped by design (Kysely docs)
    async up(db: Kysely<any>) {
      await db.schema.alterTable('jobs').addColumn('resumed_at', 'bigint').execute();
      await db.schema.alterTable('jobs').addColumn('hold_admitted_attempt', 'bigint').execute();
    },
    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- as above
    async down(db: Kysely<any>) {
      await db.schema.alterTable('jobs').dropColumn('hold_admitted_attempt').execute();
      await db.schema.alterTable('jobs').dropColumn('resumed_at').execute();
    },
  };
}
