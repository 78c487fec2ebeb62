import type { Store } from '../../store/types.js';

/** How long a receiver's row (with its secret) is reused without reading the store, ms. */
export const RECEIVER_CACHE_MS = 2000;

type Credentials = NonNullable<Awaited<ReturnType<Store['findReceiverCredentials']>>>;

/**
 * Per-store caches (a test may run several servers on several stores in one process): found
 * rows, reads in flight, and a generation that {@link forgetReceivers} moves on.
 */
interface Cache {
  rows: Map<string, { at: number; value: Credentials }>;
  reading: Map<string, Promise<Credentials | null>>;
  generation: number;
}
const caches = new WeakMap<Store, Cache>();

/**
 * `store.findReceiverCredentials(name)` with a short cache (issue 7 throughput: one query less
 * per delivery). A found receiver is reused for {@link RECEIVER_CACHE_MS} ms measured by `now`
 * (epoch ms); misses are never cached (a receiver created just now is found at once). Callers
 * arriving while the row is being read share that read (at 2,000 deliveries/s, every expiry
 * otherwise sent one query per delivery arriving during the read's round trip). A delete
 * through this server calls {@link forgetReceivers} (a read in flight then is answered but not
 * kept); a delete on another replica is seen after at most {@link RECEIVER_CACHE_MS} ms. The
 * secret stays in this process's memory only.
 */
export async function cachedReceiver(store: Store, name: string, now: number): Promise<Credentials | null> {
  let cache = caches.get(store);
  if (!cache) caches.set(store, (cache = { rows: new Map(), reading: new Map(), generation: 0 }));
  const hit = cache.rows.get(name);
  if (hit && now - hit.at >= 0 && now - hit.at < RECEIVER_CACHE_MS) return hit.value;
  const pending = cache.reading.get(name);
  if (pending) return pending;
  const c = cache;
  const generation = c.generation;
  const read = store.findReceiverCredentials(name).then(
    (found) => {
      if (c.reading.get(name) === read) c.reading.delete(name);
      if (generation !== c.generation) return found;
      if (found) {
        if (c.rows.size > 1000) c.rows.clear();
        c.rows.set(name, { at: now, value: found });
      } else c.rows.delete(name);
      return found;
    },
    (err: unknown) => {
      if (c.reading.get(name) === read) c.reading.delete(name);
      throw err;
    },
  );
  c.reading.set(name, read);
  return read;
}

/** Drops every cached receiver of `store` (after a delete); reads in flight are not kept. */
export function forgetReceivers(store: Store): void {
  const cache = caches.get(store);
  if (!cache) return;
  cache.rows.clear();
  cache.reading.clear();
  cache.generation++;
}
