// A budget-paused job whose stopped attempt the runner has not reported gone keeps its runner
// slot (issue 3 point 5 + issue 5 "one runner at a time"): the capacity reads count it, a top-up
// defers its resume until the attempt ended, and the store calls that settle it. Both engines.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { openPostgresStore } from './postgres.js';
import { openSqliteStore } from './sqlite.js';
import { createTestDatabase, type TestDatabase } from './test-pg.js';
import type { FrameMove } from './dispatch-types.js';
import type { Store } from './types.js';

const T = 1_800_000_000_000;
const dir = mkdtempSync(join(tmpdir(), 'flotilla-paused-hold-'));
const db: TestDatabase | null = await createTestDatabase();
const opened: Store[] = [];
afterAll(async () => {
  for (const s of opened) await s.close();
  await db?.drop();
  rmSync(dir, { recursive: true, force: true });
});

const engines: Array<[string, (() => Promise<Store>) | null]> = [
  ['sqlite', () => openSqliteStore(join(dir, 'db.sqlite'))],
  ['postgres', db ? () => openPostgresStore(db.url, { maxConnections: 2 }) : null],
];

describe.each(engines)('%s', (_name, open) => {
  let n = 0;
  /** A running job (attempt 1, session `sess-<tag>`) on a new runner, paused for budget. */
  async function pausedJob(s: Store, tag: string) {
    const r = await s.createRunner({ name: `${tag}-${++n}`, labels: {}, capacity: 2, credentialHash: `${tag}${n}`.padEnd(64, '0'), now: T });
    const j = await s.createJob({ parentId: null, agent: 'a', agentVersion: '1', input: {}, selector: {}, priority: 0, budgetMicros: 1, now: T });
    await s.claimJobById(j.id, { id: r.id, labels: {} }, `t${tag}${n}`.padEnd(64, '0'), T);
    await s.transitionJob(j.id, 1, ['assigned'], 'running', T, { sessionId: `sess-${tag}`, startedAt: T });
    expect(await s.pauseJobForBudget(j.id, 1, 'tree out of budget', T + 1)).toMatchObject({ status: 'paused', finishedAt: null });
    return { jobId: j.id, runnerId: r.id };
  }
  const held = async (s: Store, jobId: number) => {
    const viaList = (await s.listActiveAssignments()).filter((a) => a.jobId === jobId);
    const viaState = (await s.listDispatchState(10, T + 100)).active.filter((a) => a.jobId === jobId);
    expect(viaState).toEqual(viaList);
    return viaList;
  };

  it.skipIf(!open)('counts the paused attempt until it ended; a top-up meanwhile resumes it only then, in its session, pinned', async () => {
    const s = await open!();
    opened.push(s);
    const { jobId, runnerId } = await pausedJob(s, 'a');
    expect(await held(s, jobId)).toEqual([{ jobId, runnerId, attempt: 1, status: 'paused', holds: 'workspace', workspace: jobId }]);

    // Top-up while held: deferred (not requeued), still holding.
    const deferred = await s.deferHeldBudgetResumes((await s.getJob(jobId))!.rootId);
    expect(deferred.map((j) => [j.id, j.status, j.endReason])).toEqual([[jobId, 'paused', 'budget_resume']]);
    expect(await s.resumeBudgetPausedJobs(jobId, T + 2)).toEqual([]);
    expect(await held(s, jobId)).toHaveLength(1);

    // The attempt ended: fenced by attempt, then requeued at once with the session it reported.
    expect(await s.endPausedAttempt(jobId, 2, T + 3)).toBeNull();
    const resumed = await s.endPausedAttempt(jobId, 1, T + 3, 'sess-a2');
    expect(resumed).toMatchObject({ status: 'queued', attempt: 1, resumeSessionId: 'sess-a2', sessionId: 'sess-a2', pinnedRunnerId: runnerId, endReason: null, error: null, finishedAt: null });
    expect(await held(s, jobId)).toEqual([]);
    expect(await s.endPausedAttempt(jobId, 1, T + 4)).toBeNull();
  });

  it.skipIf(!open)('ended without a top-up: stays paused, frees the slot; the next top-up resumes it with finishedAt cleared', async () => {
    const s = await open!();
    opened.push(s);
    const { jobId, runnerId } = await pausedJob(s, 'b');
    const ended = await s.endPausedAttempt(jobId, 1, T + 5);
    expect(ended).toMatchObject({ status: 'paused', endReason: 'budget', finishedAt: T + 5, sessionId: 'sess-b' });
    expect(await held(s, jobId)).toEqual([]);
    expect(await s.deferHeldBudgetResumes(jobId)).toEqual([]);
    expect((await s.resumeBudgetPausedJobs(jobId, T + 6)).map((j) => [j.id, j.status, j.finishedAt, j.resumeSessionId, j.pinnedRunnerId])).toEqual([[jobId, 'queued', null, 'sess-b', runnerId]]);
  });

  it.skipIf(!open)('a runner that goes away releases its paused attempts (they stay paused; a pending resume waits for the next top-up)', async () => {
    const s = await open!();
    opened.push(s);
    const { jobId, runnerId } = await pausedJob(s, 'c');
    await s.deferHeldBudgetResumes(jobId);
    // Gone silent: the sweep releases it once the runner's heartbeat is stale (a revoked runner's
    // paused job is lost instead: its session can never resume, store conformance fleet.ts)
    expect((await s.sweepStaleRunners(T + 1_000_000, T + 7)).map((j) => j.id)).not.toContain(jobId);
    expect((await s.getRunner(runnerId))?.offline).toBe(true);
    expect(await s.getJob(jobId)).toMatchObject({ status: 'paused', endReason: 'budget', finishedAt: T + 7 });
    expect(await held(s, jobId)).toEqual([]);
  });

  // The moves server/frame-move.ts builds for a job.finished: a success may also end a paused job.
  const failedMove: FrameMove = { from: ['assigned', 'running', 'cancelling'], to: 'failed', endReason: 'budget', error: null, result: null };
  const succeededMove: FrameMove = { from: ['assigned', 'running', 'cancelling', 'paused'], to: 'succeeded', endReason: null, error: null, result: { summary: 'done' } };
  it.skipIf(!open)('a success reported for a paused attempt ends the job succeeded (the frame move), nothing else does', async () => {
    const s = await open!();
    opened.push(s);
    const { jobId, runnerId } = await pausedJob(s, 'd');
    const at = new Date(T).toISOString();
    const failed = [{ rseq: 1, at, type: 'job.finished' as const, data: { status: 'failed' as const, reason: 'budget' } }];
    const f1 = await s.applyRunnerFrame({ jobId, attempt: 1, runnerId, events: failed, move: failedMove }, T + 8);
    expect(f1).toMatchObject({ accepted: true, moved: null });
    expect(await s.getJob(jobId)).toMatchObject({ status: 'paused', finishedAt: null });
    const ok = [{ rseq: 2, at, type: 'job.finished' as const, data: { status: 'succeeded' as const, result: { summary: 'done' } } }];
    const f2 = await s.applyRunnerFrame({ jobId, attempt: 1, runnerId, events: ok, move: succeededMove }, T + 9);
    expect(f2).toMatchObject({ accepted: true, moved: { status: 'succeeded', finishedAt: T + 9, endReason: null } });
    expect(await held(s, jobId)).toEqual([]);
  });
});
