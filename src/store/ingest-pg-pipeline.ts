import type pg from 'pg';
import type { CompiledQuery, Kysely, QueryResult } from 'kysely';
import type { Logger } from '../core/log.js';
import { codecFor } from './codec.js';
import type { StoreCtx } from './ctx.js';
import { ingestBatchIn } from './ingest-batch.js';
import type { Trx } from './ingest-sql.js';
import { checkDeliveries, checkDelivery } from './receivers.js';
import type { Database } from './schema.js';
import type { IngestResult, NewDelivery } from './tasks-types.js';
import type { Store } from './types.js';

/** Connections of the intake's own pool: the server ingests one batch at a time (server/hooks/ingest-batcher.ts), the second serves a replica's overlap. */
export const INGEST_POOL_SIZE = 2;

/**
 * The webhook intake's batches on PostgreSQL in fewer round trips (issue 7 tail latency). A
 * batch (ingest-batch.ts) is BEGIN, 3 statements and COMMIT; sent one after another that is 5
 * round trips, each a wake-up of the PostgreSQL backend and then of the server, and under CPU
 * contention each wake-up waits for a core. Deliveries arriving meanwhile wait for the whole
 * batch, so the batch's length is their latency floor. Here BEGIN goes out with the first
 * statement and COMMIT right behind the last (node-postgres pipeline mode: each message still
 * has its own Sync and answer, in order): 3 round trips, and 3 socket writes (each pair leaves
 * corked in one write, so the backend wakes once for it: {@link corker}). Nothing else changes: the same
 * statements, the same locks held for the same span, and the caller learns of success only
 * from COMMIT's own answer, so a delivery is answered 2xx only once durably stored.
 * The batches run on a small pool of their own ({@link INGEST_POOL_SIZE}, pipeline mode), so a
 * burst of other store work holding the main pool's connections never delays the intake.
 * Deliveries that may create a task still go the store's transaction way (receivers.ts).
 */
export function withPipelinedIngest(store: Store, db: Kysely<Database>, pool: pg.Pool, log?: Logger): Store {
  const c: StoreCtx = { db, dialect: 'postgres', codec: codecFor('postgres') };
  // An idle connection erroring (server restart) must not crash the process; the pool replaces it.
  pool.on('error', (e) => log?.warn('postgres idle connection error (webhook intake)', { error: e.message }));
  const batch = (ds: readonly NewDelivery[]) => pipelinedTransaction(pool, (trx, lastSent) => ingestBatchIn(c, trx, ds, lastSent));
  let closed: Promise<void> | null = null;
  return {
    ...store,
    async ingestDelivery(d: NewDelivery): Promise<IngestResult> {
      if (d?.createTask) return store.ingestDelivery(d);
      checkDelivery(d);
      return (await batch([d]))[0]!;
    },
    async ingestDeliveries(ds: readonly NewDelivery[]): Promise<IngestResult[]> {
      checkDeliveries(ds);
      if (ds.length === 0) return [];
      if (ds.some((d) => d.createTask)) return store.ingestDeliveries(ds);
      return batch(ds);
    },
    close: () =>
      (closed ??= (async () => {
        try {
          await store.close();
        } finally {
          await pool.end();
        }
      })()),
  };
}

/**
 * A function that corks `client`'s socket until the end of the current tick (once per tick):
 * the messages sent in one synchronous run (BEGIN and the first statement; the last statement
 * and COMMIT) leave in ONE write, so the PostgreSQL backend wakes once for them instead of once
 * per message (node-postgres corks each query's own Parse/Bind/Execute/Sync, not a run of
 * queries). Nothing waits: the socket is uncorked on the next tick, before any I/O.
 */
function corker(client: pg.PoolClient): () => void {
  const stream = (client as unknown as { connection?: { stream?: { cork?: () => void; uncork?: () => void } } }).connection?.stream;
  let corked = false;
  return () => {
    if (corked || !stream?.cork || !stream.uncork) return;
    corked = true;
    stream.cork();
    process.nextTick(() => {
      corked = false;
      stream.uncork!();
    });
  };
}

/**
 * Runs `body` in one transaction on a connection of `pool` (pipeline mode): BEGIN is sent with
 * the first statement, and COMMIT when `body` calls `lastSent` (right after sending its last
 * statement), else after `body` returns. `body`'s result is returned only after COMMIT answered
 * COMMIT. When anything fails, every statement sent is waited for, then ROLLBACK; a connection
 * that cannot even roll back is discarded.
 * @throws the first error of BEGIN, a statement or COMMIT; Error when COMMIT answered ROLLBACK
 *   (the transaction had failed: nothing stored).
 */
export async function pipelinedTransaction<T>(pool: pg.Pool, body: (trx: Trx, lastSent: () => void) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  const sent: Promise<unknown>[] = [];
  const cork = corker(client);
  const send = (text: string, values?: readonly unknown[]) => {
    cork();
    const p = client.query(text, values ? [...values] : undefined);
    sent.push(p.catch(() => {})); // settled before ROLLBACK; the caller sees the error itself
    return p;
  };
  let begin: Promise<unknown> | null = null;
  let commit: Promise<pg.QueryResult> | null = null;
  const trx: Trx = {
    async executeQuery<R>(q: CompiledQuery<R>): Promise<QueryResult<R>> {
      begin ??= send('BEGIN');
      const answer = send(q.sql, q.parameters);
      await begin; // BEGIN's error first (the statement then ran outside any transaction, and is reported as failed)
      return { rows: (await answer).rows as R[] };
    },
  };
  let failed = false;
  try {
    const out = await body(trx, () => {
      if (begin) commit ??= send('COMMIT');
    });
    if (begin) {
      const done = await (commit ?? send('COMMIT'));
      if (done.command !== 'COMMIT') throw new Error(`store: the ingest transaction ended in ${done.command ?? 'nothing'}, nothing was stored`);
    }
    return out;
  } catch (err) {
    failed = true;
    throw err;
  } finally {
    let broken: Error | undefined;
    if (failed && begin) {
      await Promise.all(sent);
      // Ends the transaction if COMMIT was never sent (after a COMMIT, PostgreSQL only warns).
      await client.query('ROLLBACK').catch((e: unknown) => {
        broken = e instanceof Error ? e : new Error(String(e));
      });
    }
    client.release(broken);
  }
}
