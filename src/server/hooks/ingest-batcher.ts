import type { IngestResult, NewDelivery, Store } from '../../store/types.js';

/** Most deliveries ingested in one transaction (the store takes at most 500). */
export const MAX_INGEST_BATCH = 128;
/**
 * Batches in flight at once per store: 1. A delivery arriving meanwhile waits for the next
 * batch, which then takes everything that queued (group commit: the busier, the bigger the
 * batch and the fewer statements per delivery). Measured with bench/webhooks.bench.js on
 * PostgreSQL, 2 cores: 1 in flight costs 360-400 µs of CPU per delivery (server + load
 * generator + PostgreSQL), 2 in flight 460-530 µs (smaller batches, and two batches wait on
 * each other's task row locks anyway); on SQLite a second batch would only wait for the one
 * connection. More replicas still ingest in parallel.
 */
export const MAX_IN_FLIGHT = 1;

interface Pending {
  d: NewDelivery;
  resolve: (r: IngestResult) => void;
  reject: (e: unknown) => void;
}

/**
 * Group commit for webhook deliveries (issue 7 throughput): deliveries arriving while the
 * previous batch commits are stored together in one transaction (`store.ingestDeliveries`:
 * set-based, a few statements per batch), so one commit (one WAL flush) and a handful of
 * round trips serve many. No timer: a delivery with nothing in flight is stored in the same
 * event-loop turn, so a lone delivery waits for nobody. A batch keeps arrival order (each as
 * alone, in order). A batch that fails (nothing of it is stored: a bad delivery, or a
 * deadlock PostgreSQL broke between replicas) falls back to one transaction per delivery, so
 * each gets its own answer or error. A delivery that creates a task goes alone (its
 * key-ownership race is retried by the caller). Each caller's promise settles only after its
 * transaction committed (or failed): a 2xx is never sent for a delivery that is not durably
 * stored.
 */
export class IngestBatcher {
  private readonly queue: Pending[] = [];
  private inFlight = 0;
  private scheduled = false;

  constructor(private readonly store: Store) {}

  /** Stores `d` (as `store.ingestDelivery`), batched with concurrent ones. @throws what ingestDelivery throws. */
  ingest(d: NewDelivery): Promise<IngestResult> {
    if (d.createTask) return this.store.ingestDelivery(d);
    return new Promise((resolve, reject) => {
      this.queue.push({ d, resolve, reject });
      this.schedule();
    });
  }

  /**
   * Starts the next batch after the current event-loop turn (setImmediate, no timer delay), so
   * that it takes every delivery whose request was read in the same turn. Without that, on
   * SQLite (whose driver runs a whole transaction in microtasks, before the next request is
   * read) every batch would hold one delivery.
   */
  private schedule(): void {
    if (this.scheduled || this.inFlight >= MAX_IN_FLIGHT) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      this.pump();
    });
  }

  private pump(): void {
    while (this.inFlight < MAX_IN_FLIGHT && this.queue.length > 0) {
      const batch = this.queue.splice(0, MAX_INGEST_BATCH);
      this.inFlight++;
      void this.flush(batch).finally(() => {
        this.inFlight--;
        if (this.queue.length) this.schedule();
      });
    }
  }

  private async flush(batch: Pending[]): Promise<void> {
    let results: IngestResult[];
    try {
      results = await this.store.ingestDeliveries(batch.map((p) => p.d));
    } catch (err) {
      if (batch.length === 1) return batch[0]!.reject(err);
      for (const p of batch) await this.store.ingestDelivery(p.d).then(p.resolve, p.reject);
      return;
    }
    batch.forEach((p, i) => p.resolve(results[i]!));
  }
}

const batchers = new WeakMap<Store, IngestBatcher>();

/** The batcher of `store` (one per store in this process). */
export function ingestBatcher(store: Store): IngestBatcher {
  let b = batchers.get(store);
  if (!b) batchers.set(store, (b = new IngestBatcher(store)));
  return b;
}
