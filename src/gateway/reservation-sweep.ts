import type { Logger } from '../core/log.js';
import type { Store } from '../store/types.js';

/**
 * One pass of the reservation sweep (run by the control plane's sweeper, server/sweeper.ts):
 * every budget reservation past its expiry — its gateway process died or hung mid-call before
 * settling, and the upstream probably billed the call — is charged as the call's cost (its
 * reserved worst case) with a ledger row marked usage unknown, instead of being released for
 * free (H7; store/expired-reservations.ts releaseExpiredReservations; at most 500 per pass; a
 * settle that still comes replaces the charge with the real cost). Logs one line per tree.
 * `now` epoch ms.
 * @returns how many reservations were swept. Store errors are logged, not thrown.
 */
export async function releaseExpiredReservations(store: Pick<Store, 'releaseExpiredReservations'>, now: number, log: Logger): Promise<number> {
  try {
    const swept = await store.releaseExpiredReservations(now);
    for (const r of swept) {
      log.warn('gateway: charged expired budget reservations as calls of unknown usage (their gateway died mid-call?)', { rootId: r.rootId, count: r.count, chargedMicros: r.chargedMicros });
    }
    return swept.reduce((n, r) => n + r.count, 0);
  } catch (err) {
    log.error('gateway: sweeping expired budget reservations failed', { error: (err as Error).message });
    return 0;
  }
}
