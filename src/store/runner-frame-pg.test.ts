// The PostgreSQL one-statement path of store.applyRunnerFrame (runner-frame-pg.ts) when another
// writer holds the job row: the statement waits for the lock, and its seq/rseq reads are of the
// snapshot taken before the wait. Forced here with a second connection that locks the row,
// writes, and commits only once the frame waits: the frame must then neither fail nor store a
// duplicate (it is redone by the transaction path), and must see the row as committed.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EventBody } from '../protocol/index.js';
import { openPostgresStore } from './postgres.js';
import { createTestDatabase, type TestDatabase } from './test-pg.js';
import type { Store } from './types.js';

const T = 1_800_000_000_000;
const at = (ms: number) => new Date(ms).toISOString();
const msg = (text: string): EventBody => ({ type: 'message', data: { role: 'assistant', text } });

// One database for this file (null: no PostgreSQL server reachable, outside CI: skipped).
const db: TestDatabase | null = await createTestDatabase();
let store: Store;
let raw: pg.Client;
beforeAll(async () => {
  if (!db) return;
  store = await openPostgresStore(db.url, { maxConnections: 2 });
  raw = new pg.Client({ connectionString: db.url });
  await raw.connect();
});
afterAll(async () => {
  await raw?.end();
  await store?.close();
  await db?.drop();
});

/** A job claimed (attempt 1) by a new runner. */
async function claimedJob(tag: string): Promise<{ jobId: number; runnerId: number }> {
  const r = await store.createRunner({ name: tag, labels: {}, capacity: 1, credentialHash: `c-${tag}`.padEnd(64, '0'), now: T });
  const j = await store.createJob({ parentId: null, agent: 'a', agentVersion: '1', input: {}, selector: {}, priority: 0, budgetMicros: 0, now: T });
  await store.claimJobById(j.id, { id: r.id, labels: {} }, `t-${tag}`.padEnd(64, '0'), T);
  return { jobId: j.id, runnerId: r.id };
}

/** Runs `write` on the raw connection inside a transaction holding job `jobId`'s row lock; commits once another session waits for that lock. */
async function whileLocked(jobId: number, write: (c: pg.Client) => Promise<void>, during: () => Promise<unknown>): Promise<unknown> {
  await raw.query('begin');
  await raw.query('select 1 from jobs where id = $1 for update', [jobId]);
  await write(raw);
  const pending = during();
  const deadline = Date.now() + 10_000;
  for (;;) {
    const { rows } = await raw.query<{ n: string }>(`select count(*) as n from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'`);
    if (Number(rows[0]!.n) > 0) break;
    if (Date.now() > deadline) throw new Error('the frame never waited for the row lock');
    await new Promise((r) => setTimeout(r, 10));
  }
  await raw.query('commit');
  return pending;
}

describe.skipIf(db === null)('applyRunnerFrame on PostgreSQL, racing a writer that holds the job row', () => {
  it('an event committed by the lock holder meanwhile: the frame takes the next seqs and skips the rseq it stored', async () => {
    const { jobId, runnerId } = await claimedJob('seq');
    const frame = { jobId, attempt: 1, runnerId, events: [1, 2, 3].map((i) => ({ ...msg(`r${i}`), rseq: i, at: at(T + i) })), move: { from: ['assigned' as const], to: 'running' as const, startedAt: T + 5 } };
    const out = await whileLocked(
      jobId,
      async (c) => {
        // Seq 1 from a server event, and rseq 2 of this attempt already stored (a resend raced the first send).
        await c.query(`insert into job_events (job_id, seq, attempt, rseq, type, data, at) values ($1, 1, 1, null, 'status', '{"status":"assigned"}', $2)`, [jobId, at(T)]);
        await c.query(`insert into job_events (job_id, seq, attempt, rseq, type, data, at) values ($1, 2, 1, 2, 'message', '{"role":"assistant","text":"r2"}', $2)`, [jobId, at(T + 2)]);
      },
      () => store.applyRunnerFrame(frame, T + 5),
    );
    // Seen after the lock: seqs 1-2 taken, rseq 2 stored; rseq 1 and 3 get seqs 3 and 4.
    expect(out).toMatchObject({ accepted: true, upTo: 3, moved: { status: 'running', startedAt: T + 5 } });
    expect((out as { stored: { seq: number }[] }).stored.map((e) => e.seq)).toEqual([3, 4]);
    const all = await store.listEvents(jobId, 0, 10);
    expect(all.map((e) => [e.seq, e.type === 'message' ? e.data.text : e.type])).toEqual([
      [1, 'status'],
      [2, 'r2'],
      [3, 'r1'],
      [4, 'r3'],
    ]);
  });

  it('the lock holder moved the job to a new attempt meanwhile: the frame is refused and stores nothing', async () => {
    const { jobId, runnerId } = await claimedJob('attempt');
    const out = await whileLocked(
      jobId,
      async (c) => {
        await c.query(`update jobs set attempt = 2 where id = $1`, [jobId]);
      },
      () => store.applyRunnerFrame({ jobId, attempt: 1, runnerId, events: [{ ...msg('late'), rseq: 1, at: at(T) }], move: { from: ['assigned', 'running'], to: 'failed', endReason: 'error' } }, T + 9),
    );
    expect(out).toEqual({ accepted: false, job: { runnerId, status: 'assigned', attempt: 2 } });
    expect(await store.listEvents(jobId, 0, 10)).toEqual([]);
    expect(await store.getJob(jobId)).toMatchObject({ status: 'assigned', attempt: 2, finishedAt: null });
  });
});
