import { needMicrosAt } from '../gateway/worst-case.js';
import { priceFor, type PriceTable } from '../gateway/prices.js';
import type { Store } from '../store/types.js';

/**
 * Prices again the needs of tree `rootId`'s paused and resumed jobs (issue 3): a budget pause
 * stores the need of the refused call in µ$ at the prices of then, and what it was worked out
 * from (store NeedCall); when a price changed since (a route's price set or deleted through the
 * API, another replica's, the configuration), the need at today's `prices` is stored instead
 * (store.setPausedNeed, which writes the held room of a resumed job's need again). Fresh tester:
 * a price set 100× by mistake and put back left a paused job asking for $1.80 where $0.018
 * fitted; a price raised resumed a job into room its call no longer fit. Jobs paused before the
 * need's call was kept keep their need. µ$.
 * @returns how many needs changed.
 */
export async function repriceNeeds(store: Pick<Store, 'listPricedNeeds' | 'setPausedNeed'>, prices: PriceTable, rootId: number): Promise<number> {
  let changed = 0;
  for (const n of await store.listPricedNeeds(rootId)) {
    const micros = Math.max(1, needMicrosAt(n.call, priceFor(prices, n.call.model)));
    if (micros !== n.needMicros && (await store.setPausedNeed(n.jobId, micros))) changed++;
  }
  return changed;
}
