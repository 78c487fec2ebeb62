// PostgreSQL notes on queued jobs (queued-events.ts): both paths — the one statement, and the
// locked transaction it falls back to after a unique-key collision (rare, so called directly
// here) — skip a row another writer holds, store only on queued jobs, at the job's next seq.
import { describe, expect, it } from 'vitest';
import type { EventBody, JobEvent } from '../protocol/index.js';
import { appendIfQueuedPgLocked, type QueuedJobEvent } from './queued-events.js';
import { createTestDatabase, pgStoreFixture, type TestDatabase } from './test-pg.js';

const T = 1_800_000_000_000;
const note = (message: string): EventBody => ({ type: 'status', data: { status: 'queued', message } });

const db: TestDatabase | null = await createTestDatabase();
const f = pgStoreFixture(db);

type Append = (events: readonly QueuedJobEvent[], now: number) => Promise<JobEvent[]>;
const paths: [string, () => Append][] = [
  ['one statement (appendEventsIfQueued)', () => (events, now) => f.store.appendEventsIfQueued(events, now)],
  ['locked transaction (appendIfQueuedPgLocked)', () => (events, now) => appendIfQueuedPgLocked(f.ctx, events, new Date(now).toISOString())],
];

describe.skipIf(!db)('PostgreSQL notes on queued jobs', () => {
  for (const [name, path] of paths) {
    it(`${name}: notes queued jobs at their next seq, skips a row another writer holds and a job no longer queued`, async () => {
      const append = path();
      const tag = name.split(' ')[0]!;
      const r = await f.store.createRunner({ name: `r-${tag}`, labels: {}, capacity: 1, credentialHash: `r-${tag}`.padEnd(64, '0'), now: T });
      const job = () => f.store.createJob({ parentId: null, agent: 'a', agentVersion: '1', input: {}, selector: {}, priority: 0, budgetMicros: 0, now: T });
      const A = await job(); // queued, one event already
      const B = await job(); // queued, none
      const C = await job(); // assigned before
      const F = await job(); // row locked by another writer: skipped
      await f.store.appendServerEvent(A.id, note('first'), T);
      await f.store.claimJobById(C.id, { id: r.id, labels: {} }, `c-${tag}`.padEnd(64, '0'), T);
      await f.raw.query('begin');
      await f.raw.query('select id from jobs where id = $1 for update', [F.id]);
      let got: JobEvent[];
      try {
        got = await append([F, C, B, A].map((j) => ({ jobId: j.id, event: note(`n${j.id}`) })), T + 5);
      } finally {
        await f.raw.query('rollback');
      }
      // The store's contract is `events` order; the locked path returns them in lock (id) order.
      const at = '2027-01-15T08:00:00.005Z';
      expect([...got].sort((a, b) => a.jobId - b.jobId)).toEqual([
        { jobId: A.id, seq: 2, type: 'status', data: { status: 'queued', message: `n${A.id}` }, at },
        { jobId: B.id, seq: 1, type: 'status', data: { status: 'queued', message: `n${B.id}` }, at },
      ]);
      expect(await f.store.listEvents(C.id, 0, 10)).toEqual([]);
      expect(await f.store.listEvents(F.id, 0, 10)).toEqual([]);
      // F is noted once the other writer let go.
      expect((await append([{ jobId: F.id, event: note('f') }], T + 6)).map((e) => [e.jobId, e.seq])).toEqual([[F.id, 1]]);
    });
  }
});
