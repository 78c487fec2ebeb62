import type { Logger } from '../core/log.js';
import type { Store } from '../store/types.js';

/**
 * One pass of the reservation sweep (run by the control plane's sweeper, server/sweeper.ts):
 * every budget reservation past its expiry — its gateway process died or hung mid-call before
 * settling — is released, so its tree's budget is whole again (store/budgets.ts
 * releaseExpiredReservations; at most 500 per pass). Logs one line per tree. `now` epoch ms.
 * @returns how many reservations were released. Store errors are logged, not thrown.
 */
export async function releaseExpiredReservations(store: Pick<Store, 'releaseExpiredReservations'>, now: number, log: Logger): Promise<number> {
  try {
    const released = await store.releaseExpiredReservations(now);
    for (const r of released) {
      log.warn('gateway: released expired budget reservations (their gateway died mid-call?)', { rootId: r.rootId, count: r.count, releasedMicros: r.releasedMicros });
    }
    return released.reduce((n, r) => n + r.count, 0);
  } catch (err) {
    log.error('gateway: releasing expired budget reservations failed', { error: (err as Error).message });
    return 0;
  }
}
