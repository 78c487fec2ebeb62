import { toRunnerRow } from './codec.js';
import type { StoreCtx } from './ctx.js';
import type { RunnerRow } from './types.js';

/** A capacity setting that cannot be applied (out of range, browser slots > capacity); the message names the field. */
export class CapacityError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'CapacityError';
  }
}

/** Checks an owner setting: null (clear) or an integer 1–4. @throws Error naming the field. */
function checkSlots(field: string, v: number | null | undefined): void {
  if (v === undefined || v === null) return;
  if (!Number.isInteger(v) || v < 1 || v > 4) throw new CapacityError(`store: ${field} must be an integer from 1 to 4 (or null to clear), got ${JSON.stringify(v)}`);
}

/**
 * The owner's capacity setting for runner `id` (0009 `owner_capacity`, `owner_browser_slots`):
 * a given field replaces the stored one, null clears it, an absent one is kept. Read and
 * write in one transaction so the check "browser slots ≤ parallel jobs" sees the row it
 * changes (the runner's own offer counts where no owner value is set).
 * Rule from issue 5: "parallel jobs 1–4 (owner setting) and browser slots 1–4, never more than
 * its parallel jobs".
 * When only `capacity` is given, the owner's stored browser-slot setting is lowered to the new
 * capacity if above it (the runner's own offer is counted as at most the capacity anyway).
 * @returns the updated runner, or null when it does not exist.
 * @throws CapacityError naming the field when a value is not 1–4, or when the browser slots given
 *   would exceed the capacity (nothing is changed then).
 */
export async function setRunnerCapacity(c: StoreCtx, id: number, set: { capacity?: number | null; browserSlots?: number | null }): Promise<RunnerRow | null> {
  checkSlots('capacity', set.capacity);
  checkSlots('browserSlots', set.browserSlots);
  return c.db.transaction().execute(async (trx) => {
    const cur = await trx.selectFrom('runners').select(['capacity', 'browser_slots', 'owner_capacity', 'owner_browser_slots']).where('id', '=', id).executeTakeFirst();
    if (!cur) return null;
    const ownerCapacity = set.capacity !== undefined ? set.capacity : cur.owner_capacity === null ? null : Number(cur.owner_capacity);
    const storedBrowser = cur.owner_browser_slots === null ? null : Number(cur.owner_browser_slots);
    const capacity = ownerCapacity ?? Number(cur.capacity);
    let ownerBrowser = set.browserSlots !== undefined ? set.browserSlots : storedBrowser;
    // Only capacity given (e.g. `runners set R --capacity auto`): a stored browser-slot setting
    // above the new capacity follows it down rather than refusing the change.
    if (set.browserSlots === undefined && ownerBrowser !== null && ownerBrowser > capacity) ownerBrowser = capacity;
    if (ownerBrowser !== null && ownerBrowser > capacity) {
      throw new CapacityError(`store: browserSlots (${ownerBrowser}) must not exceed capacity (${capacity})`);
    }
    const row = await trx
      .updateTable('runners')
      .set({ owner_capacity: ownerCapacity, owner_browser_slots: ownerBrowser })
      .where('id', '=', id)
      .returningAll()
      .executeTakeFirstOrThrow();
    return toRunnerRow(c.codec, row);
  });
}
