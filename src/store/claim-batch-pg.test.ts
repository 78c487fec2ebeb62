// PostgreSQL claims (claim-batch.ts): both paths — the one statement, and the locked transaction
// it falls back to after a unique-key collision (rare, so called directly here) — lock each
// wanted job by its id (LOCK_WANTED), skip a row another writer holds, and claim only what still
// fits (never for a runner the store has offline), with its event at the job's next seq.
import { describe, expect, it } from 'vitest';
import type { EventBody } from '../protocol/index.js';
import { claimPgLocked, type ClaimRequest, type ClaimedJob } from './claim-batch.js';
import { createTestDatabase, pgStoreFixture, type TestDatabase } from './test-pg.js';

const T = 1_800_000_000_000;
const assigned = (runnerId: number): EventBody => ({ type: 'status', data: { status: 'assigned', message: 'assigned', runnerId } });

const db: TestDatabase | null = await createTestDatabase();
const f = pgStoreFixture(db);

type Claim = (claims: readonly ClaimRequest[], now: number) => Promise<ClaimedJob[]>;
const paths: [string, () => Claim][] = [
  ['one statement (claimJobsById)', () => (claims, now) => f.store.claimJobsById(claims, now)],
  ['locked transaction (claimPgLocked)', () => (claims, now) => claimPgLocked(f.ctx, claims, now, new Date(now).toISOString())],
];

describe.skipIf(!db)('PostgreSQL batch claims', () => {
  for (const [name, path] of paths) {
    it(`${name}: claims what still fits, skips a row another writer holds, events at the next seq`, async () => {
      const claim = path();
      const tag = name.split(' ')[0]!;
      const lin = await f.store.createRunner({ name: `lin-${tag}`, labels: { os: 'linux' }, capacity: 4, credentialHash: `l-${tag}`.padEnd(64, '0'), now: T });
      const other = await f.store.createRunner({ name: `o-${tag}`, labels: {}, capacity: 1, credentialHash: `o-${tag}`.padEnd(64, '0'), now: T });
      const job = (over: { selector?: Record<string, string>; pinnedRunnerId?: number } = {}) =>
        f.store.createJob({ parentId: null, agent: 'a', agentVersion: '1', input: {}, selector: over.selector ?? {}, priority: 0, budgetMicros: 0, now: T, ...(over.pinnedRunnerId ? { pinnedRunnerId: over.pinnedRunnerId } : {}) });
      const A = await job({ selector: { os: 'linux' } }); // fits
      const B = await job({ pinnedRunnerId: other.id }); // pinned elsewhere
      const C = await job(); // fits, has an event already
      const D = await job(); // taken before
      const E = await job({ selector: { os: 'mac' } }); // labels do not fit
      const F = await job(); // row locked by another writer: skipped, stays queued
      const G = await job(); // for a runner the store has offline (another replica's sweep): not claimed
      const off = await f.store.createRunner({ name: `off-${tag}`, labels: {}, capacity: 1, credentialHash: `f-${tag}`.padEnd(64, '0'), now: T });
      await f.raw.query('update runners set offline = 1 where id = $1', [off.id]);
      await f.store.appendServerEvent(C.id, { type: 'status', data: { status: 'queued', message: 'waiting' } }, T);
      await f.store.claimJobById(D.id, { id: other.id, labels: {} }, `d-${tag}`.padEnd(64, '0'), T);
      await f.raw.query('begin');
      await f.raw.query('select id from jobs where id = $1 for update', [F.id]);
      let got: ClaimedJob[];
      try {
        got = await claim(
          [
            ...[F, E, D, C, B, A].map((j) => ({ jobId: j.id, runner: { id: lin.id, labels: { os: 'linux' } }, tokenHash: `${tag}-${j.id}`.padEnd(64, '0'), holds: 'workspace' as const, event: assigned(lin.id) })),
            { jobId: G.id, runner: { id: off.id, labels: {} }, tokenHash: `${tag}-g`.padEnd(64, '0'), holds: 'workspace' as const, event: assigned(off.id) },
          ],
          T + 5,
        );
      } finally {
        await f.raw.query('rollback');
      }
      // claims order is the store's contract for claimJobsById; the locked path returns lock order (by id)
      expect(got.map((g) => g.job.id).sort((a, b) => a - b)).toEqual([A.id, C.id]);
      for (const g of got) expect(g.job).toMatchObject({ status: 'assigned', attempt: 1, runnerId: lin.id, assignedAt: T + 5 });
      const byId = new Map(got.map((g) => [g.job.id, g.event]));
      expect(byId.get(C.id)).toMatchObject({ jobId: C.id, seq: 2, type: 'status', data: { status: 'assigned', runnerId: lin.id } });
      expect(byId.get(A.id)?.seq).toBe(1);
      for (const left of [B, E, F, G]) expect(await f.store.getJob(left.id)).toMatchObject({ status: 'queued', attempt: 0, runnerId: null });
      expect(await f.store.getJob(D.id)).toMatchObject({ status: 'assigned', runnerId: other.id, attempt: 1 });
      // F is claimable once the other writer let go.
      const again = await claim([{ jobId: F.id, runner: { id: lin.id, labels: {} }, tokenHash: `${tag}-f2`.padEnd(64, '0'), holds: 'workspace', event: assigned(lin.id) }], T + 6);
      expect(again.map((g) => g.job.id)).toEqual([F.id]);
    });
  }
});
