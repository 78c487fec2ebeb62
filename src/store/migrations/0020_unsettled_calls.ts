import type { Kysely, Migration } from 'kysely';

/**
 * 0020 (gateway H4 and H7):
 * - `model_calls.web_search_requests`: the server-side web searches a call was charged for
 *   (priced per request, gateway/server-tools.ts), 0 for every earlier row.
 * - `budget_reservations.call`: JSON of the call the reservation is for (store/types.ts
 *   PendingCall: job, attempt, provider, model, api, the worst case's tokens), so the sweep
 *   can write its ledger row (usage unknown) when its gateway died before settling. Null on
 *   rows from before (the sweep then records the call on the tree's root job, model `unknown`).
 * - `budget_reservations.charged_micros` / `call_id`: set when the sweep charged an expired
 *   reservation (its micros, and the id of the ledger row it wrote). The row stays until
 *   `expires_at` (moved to the sweep's time + a day) as a marker: a settle that still comes
 *   replaces that charge and row with the real ones instead of charging twice (budgets.ts).
 */
export function unsettledCalls(): Migration {
  return {
    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations are untyped by design (Kysely docs)
    async up(db: Kysely<any>) {
      await db.schema.alterTable('model_calls').addColumn('web_search_requests', 'bigint', (c) => c.notNull().defaultTo(0)).execute();
      await db.schema.alterTable('budget_reservations').addColumn('call', 'text').execute();
      await db.schema.alterTable('budget_reservations').addColumn('charged_micros', 'bigint').execute();
      await db.schema.alterTable('budget_reservations').addColumn('call_id', 'bigint').execute();
    },
    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- as above
    async down(db: Kysely<any>) {
      // A swept reservation's marker would look like a live reservation to the old code.
      await db.deleteFrom('budget_reservations').where('charged_micros', 'is not', null).execute();
      await db.schema.alterTable('budget_reservations').dropColumn('call_id').execute();
      await db.schema.alterTable('budget_reservations').dropColumn('charged_micros').execute();
      await db.schema.alterTable('budget_reservations').dropColumn('call').execute();
      await db.schema.alterTable('model_calls').dropColumn('web_search_requests').execute();
    },
  };
}
