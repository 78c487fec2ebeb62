import { sql } from 'kysely';
import { num } from './codec.js';
import { assertInt, type StoreCtx } from './ctx.js';
import { parseJobIds, settleJobRows } from './job-budgets.js';
import { modelCallValues } from './model-calls.js';
import { decodePendingCall, sweptCallRow } from './pending-call.js';
import type { ExpiredReservations } from './types.js';

/**
 * How long the marker of a swept reservation is kept (ms): a settle that still comes within it
 * (its gateway was hung or cut off from the database, not dead) replaces the sweep's charge
 * with the real one (budgets.ts settleBudget); after it the marker is deleted and a settle
 * would charge on top. One day: far longer than any call the gateway waits for.
 */
export const SWEPT_MARKER_MS = 24 * 60 * 60_000;

/** Most reservations swept per call (the sweeper calls again next round). */
const SWEEP_BATCH = 500;

/**
 * The sweeper's part (H7). Every reservation whose `expires_at <= now` and that the sweep has
 * not charged yet — its gateway process died or hung past the TTL before settling, and the
 * upstream probably billed the call — is, in ONE transaction:
 * - charged: its tree's (and sub-limits', issue 6) `reserved -= micros`, `spent += micros`:
 *   the reserved worst case is the charge (the call's real usage is unknown; DESIGN: unknown
 *   usage is never recorded as $0, it is charged an estimate);
 * - recorded: one ledger row with usageKnown=false for its call (pending-call.ts sweptCallRow:
 *   the call's job, model and worst-case tokens as the reservation kept them);
 * - kept as a marker (`charged_micros`, `call_id`, expiry moved to now + {@link SWEPT_MARKER_MS}),
 *   so a late settle takes the charge and the row back and charges the real cost instead.
 * Markers past their expiry are deleted first. At most {@link SWEEP_BATCH} reservations per
 * call; trees updated in root_id order and job rows in id order (no lock-order cycles between
 * replicas on PostgreSQL). Two sweepers never charge one reservation twice: the UPDATE that
 * marks it re-checks `charged_micros is null` under the row lock. `now` epoch ms.
 * @returns per tree: µ$ released from `reserved` and charged to `spent`, and how many.
 */
export async function releaseExpiredReservations(c: StoreCtx, now: number): Promise<ExpiredReservations[]> {
  assertInt('now', now, 0);
  return c.db.transaction().execute(async (trx) => {
    await trx.deleteFrom('budget_reservations').where('charged_micros', 'is not', null).where('expires_at', '<=', now).execute();
    const expired = trx.selectFrom('budget_reservations').select('id').where('expires_at', '<=', now).where('charged_micros', 'is', null).orderBy('id').limit(SWEEP_BATCH);
    const swept = await trx
      .updateTable('budget_reservations')
      .set({ charged_micros: sql<number>`micros`, expires_at: now + SWEPT_MARKER_MS })
      .where('id', 'in', expired)
      .where('charged_micros', 'is', null)
      .returning(['id', 'root_id', 'micros', 'job_ids', 'call', 'created_at'])
      .execute();
    swept.sort((a, b) => num(a.id) - num(b.id));
    const per = new Map<number, ExpiredReservations>();
    const perJob = new Map<number, number>(); // issue 6: job_budgets id → µ$ moved from reserved to spent
    for (const g of swept) {
      const rootId = num(g.root_id);
      const micros = num(g.micros);
      const row = modelCallValues(sweptCallRow(decodePendingCall(g.call), rootId, micros, num(g.created_at), now));
      const call = await trx.insertInto('model_calls').values(row).returning('id').executeTakeFirstOrThrow();
      await trx.updateTable('budget_reservations').set({ call_id: num(call.id) }).where('id', '=', num(g.id)).execute();
      for (const j of parseJobIds(g.job_ids)) perJob.set(j, (perJob.get(j) ?? 0) + micros);
      const e = per.get(rootId) ?? { rootId, releasedMicros: 0, chargedMicros: 0, count: 0 };
      e.releasedMicros += micros;
      e.chargedMicros += micros;
      e.count++;
      per.set(rootId, e);
    }
    const out = [...per.values()].sort((a, b) => a.rootId - b.rootId);
    for (const e of out) {
      await trx
        .updateTable('tree_budgets')
        .set({
          reserved_micros: sql<number>`case when reserved_micros >= ${e.releasedMicros} then reserved_micros - ${e.releasedMicros} else 0 end`,
          spent_micros: sql<number>`spent_micros + ${e.chargedMicros}`,
          updated_at: now,
        })
        .where('root_id', '=', e.rootId)
        .execute();
    }
    for (const [jobId, micros] of [...perJob].sort((a, b) => a[0] - b[0])) await settleJobRows(trx, [jobId], micros, micros, now);
    return out;
  });
}
