import type { IngestResult, NewDelivery, Store } from '../../store/types.js';

/** Most deliveries ingested in one transaction. */
export const MAX_INGEST_BATCH = 64;
/** Batches in flight at once per store (more overlap commits; each holds one pooled connection). */
const MAX_IN_FLIGHT = 4;

interface Pending {
  d: NewDelivery;
  resolve: (r: IngestResult) => void;
  reject: (e: unknown) => void;
}

/**
 * Group commit for webhook deliveries (issue 7 throughput): deliveries arriving while earlier
 * batches commit are stored together in one transaction (`store.ingestDeliveries`), so one
 * commit (one WAL flush) serves many. No timer: a delivery with nothing in flight is stored at
 * once. Batches take deliveries sorted by resource key, so two batches lock task rows in the
 * same order. A batch that fails (nothing of it is stored) falls back to one transaction per
 * delivery, so each gets its own answer or error; only a delivery that creates a task goes
 * alone anyway (its key-ownership race is retried by the caller).
 */
export class IngestBatcher {
  private readonly queue: Pending[] = [];
  private inFlight = 0;

  constructor(private readonly store: Store) {}

  /** Stores `d` (as `store.ingestDelivery`), batched with concurrent ones. @throws what ingestDelivery throws. */
  ingest(d: NewDelivery): Promise<IngestResult> {
    if (d.createTask) return this.store.ingestDelivery(d);
    return new Promise((resolve, reject) => {
      this.queue.push({ d, resolve, reject });
      this.pump();
    });
  }

  private pump(): void {
    while (this.inFlight < MAX_IN_FLIGHT && this.queue.length > 0) {
      const batch = this.queue.splice(0, MAX_INGEST_BATCH);
      this.inFlight++;
      void this.flush(batch).finally(() => {
        this.inFlight--;
        this.pump();
      });
    }
  }

  private async flush(batch: Pending[]): Promise<void> {
    if (batch.length === 1) {
      const p = batch[0]!;
      await this.store.ingestDelivery(p.d).then(p.resolve, p.reject);
      return;
    }
    const sorted = [...batch].sort((a, b) => (a.d.event.key ?? '').localeCompare(b.d.event.key ?? ''));
    try {
      const results = await this.store.ingestDeliveries(sorted.map((p) => p.d));
      sorted.forEach((p, i) => p.resolve(results[i]!));
    } catch {
      for (const p of sorted) await this.store.ingestDelivery(p.d).then(p.resolve, p.reject);
    }
  }
}

const batchers = new WeakMap<Store, IngestBatcher>();

/** The batcher of `store` (one per store in this process). */
export function ingestBatcher(store: Store): IngestBatcher {
  let b = batchers.get(store);
  if (!b) batchers.set(store, (b = new IngestBatcher(store)));
  return b;
}
