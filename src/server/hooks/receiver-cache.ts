import type { Store } from '../../store/types.js';

/** How long a receiver's row (with its secret) is reused without reading the store, ms. */
export const RECEIVER_CACHE_MS = 2000;

type Credentials = NonNullable<Awaited<ReturnType<Store['findReceiverCredentials']>>>;

/** Per-store caches (a test may run several servers on several stores in one process). */
const caches = new WeakMap<Store, Map<string, { at: number; value: Credentials }>>();

/**
 * `store.findReceiverCredentials(name)` with a short cache (issue 7 throughput: one query less
 * per delivery). A found receiver is reused for {@link RECEIVER_CACHE_MS} ms measured by `now`
 * (epoch ms); misses are never cached (a receiver created just now is found at once). A delete
 * through this server calls {@link forgetReceivers}; a delete on another replica is seen after
 * at most {@link RECEIVER_CACHE_MS} ms. The secret stays in this process's memory only.
 */
export async function cachedReceiver(store: Store, name: string, now: number): Promise<Credentials | null> {
  let cache = caches.get(store);
  if (!cache) caches.set(store, (cache = new Map()));
  const hit = cache.get(name);
  if (hit && now - hit.at >= 0 && now - hit.at < RECEIVER_CACHE_MS) return hit.value;
  const found = await store.findReceiverCredentials(name);
  if (found) {
    if (cache.size > 1000) cache.clear();
    cache.set(name, { at: now, value: found });
  } else cache.delete(name);
  return found;
}

/** Drops every cached receiver of `store` (after a delete). */
export function forgetReceivers(store: Store): void {
  caches.get(store)?.clear();
}
