import net from 'node:net';
import pg from 'pg';
import { CompiledQuery } from 'kysely';
import { afterAll, describe, expect, it } from 'vitest';
import { pipelinedTransaction } from './ingest-pg-pipeline.js';
import { openPostgresStore } from './postgres.js';
import { PreparingClient } from './pg-prepared.js';
import { createTestDatabase } from './test-pg.js';

const db = await createTestDatabase();
afterAll(async () => {
  await db?.drop();
});

const T = 1_800_000_000_000;
const raw = (text: string, params: unknown[] = []) => CompiledQuery.raw(text, params);

/**
 * Records every message the store's clients send (`sent`) and how many of them had to wait for
 * an answer before going out (`trips`): all of them on a client without pipeline mode (its
 * queries queue in the driver, one at a time on the wire), else those sent while nothing else
 * was in flight on that connection.
 */
function recordRoundTrips(): { sent: string[]; trips: () => number; restore: () => void } {
  const sent: string[] = [];
  let trips = 0;
  const inFlight = new WeakMap<object, number>();
  const orig = PreparingClient.prototype.query;
  PreparingClient.prototype.query = function (this: pg.Client, ...args: unknown[]) {
    const n = inFlight.get(this) ?? 0;
    if (n === 0 || !this.pipeline) trips++;
    inFlight.set(this, n + 1);
    sent.push(String(args[0]).replace(/^\/\* prepared \*\/\s*/, '').trim().split(/\s+/).slice(0, 2).join(' '));
    const done = () => inFlight.set(this, (inFlight.get(this) ?? 1) - 1);
    const r = (orig as (...a: unknown[]) => unknown).apply(this, args) as Promise<unknown>;
    r.then(done, done);
    return r;
  } as typeof orig;
  return { sent, trips: () => trips, restore: () => void (PreparingClient.prototype.query = orig) };
}

describe.skipIf(db === null)('pipelined webhook ingest (PostgreSQL, ingest-pg-pipeline.ts)', () => {
  it('a batch of deliveries is BEGIN, 3 statements and COMMIT in 3 round trips, and is stored', async () => {
    const s = await openPostgresStore(db!.url, { schema: 'pipe_a', maxConnections: 2 });
    try {
      const r = await s.createReceiver({ name: 'gh', provider: 'github', auth: 'hmac', keyExpr: null, summaryExpr: null, fallbackTaskId: null, policies: { completeOnClose: true, wakeOnReopen: true }, secret: 'x', tokenHash: null, now: T });
      const tasks = await Promise.all([0, 1].map((i) => s.createTask({ agent: 'a', title: `t${i}`, input: {}, keys: [`k${i}`], coalesceMs: 1000, now: T })));
      const ds = [0, 1, 2].map((i) => ({ receiverId: r.id, deliveryId: `d${i}`, event: { receiverId: r.id, key: `k${i % 2}`, kind: 'issue_comment.created', actor: 'o', summary: `c${i}`, occurredAt: T + i }, fallbackTaskId: null, coalesce: 'always' as const, now: T + 10 }));
      const rec = recordRoundTrips();
      let out;
      try {
        out = await s.ingestDeliveries(ds);
      } finally {
        rec.restore();
      }
      expect(rec.sent).toEqual(['BEGIN', 'SELECT t.id,', 'WITH ins', 'WITH upd', 'COMMIT']);
      expect(rec.trips()).toBe(3);
      // Worked out: task 0 gets d0 (wake: its first event) and d2 (coalesced to the window end T+10+1000), task 1 gets d1 (wake).
      expect(out.map((x) => (x.duplicate ? 'dup' : [x.task?.id, x.window, x.task?.pendingEvents]))).toEqual([
        [tasks[0]!.id, { decision: 'wake' }, 1],
        [tasks[1]!.id, { decision: 'wake' }, 1],
        [tasks[0]!.id, { decision: 'coalesced', trailingDueAt: T + 1010 }, 2],
      ]);
      // Committed: another instance sees the events, and a repeat is a repeat.
      const other = await openPostgresStore(db!.url, { schema: 'pipe_a', maxConnections: 1 });
      try {
        expect((await other.getTask(tasks[0]!.id))?.pendingEvents).toBe(2);
        expect(await other.ingestDelivery(ds[1]!)).toEqual({ duplicate: true, taskId: tasks[1]!.id });
      } finally {
        await other.close();
      }
    } finally {
      await s.close();
      await s.close(); // twice is fine (both pools ended once)
    }
  });

  it('BEGIN leaves with the first statement and COMMIT with the last, one socket write each: 3 writes for 3 statements (5 messages)', async () => {
    const pool = new pg.Pool({ connectionString: db!.url, max: 1, pipeline: true, Client: PreparingClient });
    // Socket writes as the stream hands them to the socket: one `_write` or `_writev` per flush.
    const proto = net.Socket.prototype as unknown as Record<'_write' | '_writev', (...a: unknown[]) => unknown>;
    const orig = { _write: proto._write, _writev: proto._writev };
    let flushes = 0;
    try {
      await pool.query('select 1'); // connected before counting
      for (const k of ['_write', '_writev'] as const)
        proto[k] = function (this: unknown, ...a: unknown[]) {
          flushes++;
          return orig[k].apply(this, a);
        };
      const seen: number[] = [];
      const got = await pipelinedTransaction(pool, async (trx, lastSent) => {
        await trx.executeQuery(raw('select $1::int as x', [1]));
        seen.push(flushes);
        await trx.executeQuery(raw('select $1::int as x', [2]));
        seen.push(flushes);
        const last = trx.executeQuery(raw('select $1::int as x', [3]));
        lastSent();
        return (await last).rows;
      });
      seen.push(flushes);
      expect(got).toEqual([{ x: 3 }]);
      // BEGIN + the first statement, the second alone, the third + COMMIT (without the cork: 2, 3, 5).
      expect(seen).toEqual([1, 2, 3]);
    } finally {
      Object.assign(proto, orig);
      await pool.end();
    }
  });

  it('a statement that fails rolls the whole transaction back (COMMIT already sent behind it included); the connection is reused clean', async () => {
    const pool = new pg.Pool({ connectionString: db!.url, max: 1, pipeline: true, Client: PreparingClient });
    try {
      await pool.query('create table if not exists pipe_t (x int primary key)');
      // The failing statement is the last: COMMIT goes right behind it, PostgreSQL answers it ROLLBACK.
      const failing = pipelinedTransaction(pool, async (trx, lastSent) => {
        await trx.executeQuery(raw('insert into pipe_t (x) values ($1)', [1]));
        const bad = trx.executeQuery(raw('insert into pipe_t (x) values ($1)', [1])); // duplicate key
        lastSent();
        await bad;
      });
      await expect(failing).rejects.toThrow(/duplicate key/);
      // A failure before the last statement: no COMMIT sent, ROLLBACK ends it.
      const early = pipelinedTransaction(pool, async (trx) => {
        await trx.executeQuery(raw('insert into pipe_t (x) values ($1)', [2]));
        await trx.executeQuery(raw('select 1 / 0'));
      });
      await expect(early).rejects.toThrow(/division by zero/);
      expect((await pool.query('select count(*)::int as n from pipe_t')).rows).toEqual([{ n: 0 }]);
      // The one connection is out of any transaction: the next one commits.
      await pipelinedTransaction(pool, async (trx, lastSent) => {
        const p = trx.executeQuery(raw('insert into pipe_t (x) values ($1)', [3]));
        lastSent();
        await p;
      });
      expect((await pool.query('select x from pipe_t')).rows).toEqual([{ x: 3 }]);
    } finally {
      await pool.end();
    }
  });
});
