import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { hashToken } from '../core/tokens.js';
import { openPostgresStore, openSqliteStore } from '../store/open.js';
import { createTestDatabase } from '../store/test-pg.js';
import type { JobRow, PendingCall, Store } from '../store/types.js';
import { MemoryGatewayStore } from './memory-store.js';

// The stores the gateway's tests run against (tests only): one gateway over a fresh SQLite
// file, two gateways (two store instances) over one fresh PostgreSQL database, a running job
// on either, and an in-memory store that keeps every reservation.

/** Runs `run([store])` over a fresh SQLite store in a temp folder, then closes and removes it. */
export async function onSqlite(run: (stores: Store[]) => Promise<void>): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'flotilla-gw-'));
  const store = await openSqliteStore(join(dir, 'flotilla.db'));
  try {
    await run([store]);
  } finally {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * Runs `run([a, b])` over two store instances on one fresh PostgreSQL database (as two gateway
 * processes would be), then drops it. Calls `skip` (a vitest context's) when PostgreSQL is unreachable.
 */
export async function onTwoPostgres(run: (stores: Store[]) => Promise<void>, skip: () => void): Promise<void> {
  const db = await createTestDatabase();
  if (!db) return skip();
  const a = await openPostgresStore(db.url, { maxConnections: 4 });
  const b = await openPostgresStore(db.url, { maxConnections: 4 });
  try {
    await run([a, b]);
  } finally {
    await a.close();
    await b.close();
    await db.drop();
  }
}

/**
 * A running job on a real store whose live token is `token`, as the control plane makes one: a
 * root (or a child of `parentId`) with `budgetMicros`, claimed by a runner of its own under the
 * token's hash and started; with `spentMicros`, that much already charged to it (reserved and
 * settled, as a call would be). @returns the job as created.
 */
export async function runningJob(store: Store, token: string, o: { budgetMicros: number; parentId?: number; spentMicros?: number }): Promise<JobRow> {
  const now = Date.now();
  const job = await store.createJob({ parentId: o.parentId ?? null, agent: 'a', agentVersion: '1', input: {}, selector: {}, priority: 0, budgetMicros: o.budgetMicros, now });
  const runner = await store.createRunner({ name: `r-${job.id}`, labels: {}, capacity: 1, credentialHash: hashToken(`runner of ${token}`), now });
  if (!(await store.claimJobById(job.id, { id: runner.id, labels: {} }, hashToken(token), now))) throw new Error(`job ${job.id} could not be claimed`);
  await store.transitionJob(job.id, 1, ['assigned'], 'running', now, { startedAt: now });
  if (o.spentMicros !== undefined) {
    const held = await store.reserveBudget(job.id, o.spentMicros, now);
    if (!held?.ok) throw new Error(`job ${job.id}: ${o.spentMicros} µ$ do not fit its budget`);
    await store.settleBudget(job.id, held.reservationId, o.spentMicros, now);
  }
  return job;
}

/** A {@link MemoryGatewayStore} that also keeps every reservation made: the worst case (µ$) and the call as the reservation holds it. */
export class RecordingStore extends MemoryGatewayStore {
  readonly held: Array<{ micros: number; call: PendingCall | undefined }> = [];
  override async reserveBudget(rootId: number, worstMicros: number, now = 0, ttlMs?: number, jobId?: number, call?: PendingCall) {
    this.held.push({ micros: worstMicros, call });
    return super.reserveBudget(rootId, worstMicros, now, ttlMs, jobId, call);
  }
}
