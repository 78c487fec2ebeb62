import type { ExpressionBuilder } from 'kysely';
import type { Database } from './schema.js';

/**
 * A budget-paused attempt that still holds its runner slot: `paused` with `finished_at` null
 * (the runner has not reported its stopped process gone; core/job-state.ts pausedHoldsRunner,
 * server/paused-exit.ts). Capacity reads count such a job as active. One definition for the
 * statements that read capacity: as SQL text on `jobs` (no parameters) for the fixed
 * statements, and as a Kysely expression.
 */
export const PAUSED_HOLDING_SQL = `(status = 'paused' and finished_at is null)`;

/** {@link PAUSED_HOLDING_SQL} as a Kysely condition on `jobs`. */
export function pausedHolding(eb: ExpressionBuilder<Database, 'jobs'>) {
  return eb.and([eb('status', '=', 'paused'), eb('finished_at', 'is', null)]);
}
