/**
 * Issue 3, end to end on real parts: the real Claude Code CLI on a real runner, through the
 * control plane's gateway (scripted model, SQLite). The tree's budget covers the first model
 * call's worst case but not the second's: Claude Code stops after ONE refused call (402,
 * x-should-retry: false), the job reads `paused` (reason budget) although the runner reported
 * failed/budget, and `POST /api/jobs/:id/budget` tops it up and resumes it — same runner,
 * same session — until it succeeds.
 *
 * Worst case of a Claude Code call with test-fixer's 6 tools (gateway/budget.ts): ⌈~49 KB / 3⌉ × 6 µ$ +
 * 32,000 max_tokens × 15 µ$ ≈ 578,000 µ$. Turn 0 of test-fixer's script costs 55,362 µ$.
 * With $0.60: the first call fits (≈0.578), the second does not (0.055 + ≈0.58 > 0.60).
 */
import { describe, it, expect } from 'vitest';
import { planeWithRunner, waitFor, allEvents } from './helpers.js';

describe('budget pause and top-up with the real Claude Code', () => {
  const { plane } = planeWithRunner();
  /** Job `id` once it reads paused; throws when it ends instead. */
  const pausedJob = (id: number) =>
    waitFor('job to pause', async () => {
      const j = await plane.client.getJob(id);
      if (['succeeded', 'failed', 'cancelled', 'lost'].includes(j.status)) throw new Error(`job ended ${j.status}: ${j.endReason} ${j.error}`);
      return j.status === 'paused' ? j : null;
    }, 90_000, 200);

  it('stops after one refused call, reads paused, and a top-up resumes it to success', async () => {
    const job = await plane.client.createJob({ agent: 'test-fixer', input: { repo: 'examples/calc' }, budgetUsd: 0.6 });
    const paused = await pausedJob(job.id);
    expect(paused.endReason).toBe('budget');
    expect(paused.error).toMatch(/budget exhausted: job tree \d+/);
    // Let the runner finish the attempt (it reports failed/budget); the job must stay paused.
    await waitFor('the attempt to end', async () => (await allEvents(plane.store, job.id)).some((e) => e.type === 'attempt.ended'), 30_000);
    const stillPaused = await plane.client.getJob(job.id);
    expect(stillPaused.status).toBe('paused');
    const calls1 = await plane.store.costRollup({ by: 'job', since: 0 });
    expect(calls1[0]).toMatchObject({ key: String(job.id), calls: 2, refusedCalls: 1 }); // one call, then ONE refused

    const top = await plane.client.topUpBudget(job.id, 2);
    expect(top.resumed).toEqual([job.id]);
    const done = await waitFor('job to finish', async () => {
      const j = await plane.client.getJob(job.id);
      return ['succeeded', 'failed', 'cancelled', 'lost'].includes(j.status) ? j : null;
    }, 120_000, 200);
    expect({ status: done.status, reason: done.endReason, error: done.error }).toEqual({ status: 'succeeded', reason: null, error: null });
    expect(done.attempt).toBe(2);
    const events = await allEvents(plane.store, job.id);
    // The paused attempt's end is an attempt.ended; the job's one job.finished is its last event
    // (a client stopping at the first job.finished stopped at the pause: fresh-tester finding)
    expect(events.filter((e) => e.type === 'attempt.ended').map((e) => (e.data as { attempt: number }).attempt)).toEqual([1]);
    expect(events.filter((e) => e.type === 'job.finished').map((e) => e.seq)).toEqual([events.at(-1)!.seq]);
    const starts = events.filter((e) => e.type === 'harness.started').map((e) => (e.data as { sessionId?: string }).sessionId);
    expect(starts).toHaveLength(2);
    expect(starts[1]).toBe(starts[0]); // the same session, resumed
    // ... and the work done, not only "succeeded": the resumed session played the refused turn
    // (Read), every tool call worked, and the fix is committed (fresh-user finding: it skipped
    // the Read, the Edit was refused, nothing was committed, and the job still succeeded).
    const results = events.filter((e) => e.type === 'tool.result').map((e) => e.data as { output: string; isError: boolean });
    expect(results[0]?.isError).toBe(true); // the first `npm test`: the failing test to fix
    expect(results.slice(1).filter((r) => r.isError).map((r) => r.output)).toEqual([]);
    expect(done.result?.changedFiles).toEqual(['src/calc.js']);
    expect(done.result?.commit).toMatch(/^[0-9a-f]{40}$/);
    const budget = await plane.client.getBudget(job.id);
    expect(budget.budget.reservedMicros).toBe(0);
    expect(budget.budget.spentMicros).toBe(done.usage!.costMicros);
  }, 240_000);

  it('a top-up of exactly what the budget view says resumes the job and its resumed call fits (the resumed harness sends more)', async () => {
    const job = await plane.client.createJob({ agent: 'test-fixer', input: { repo: 'examples/calc' }, budgetUsd: 0.6 });
    await pausedJob(job.id);
    await waitFor('the attempt to end', async () => (await allEvents(plane.store, job.id)).some((e) => e.type === 'attempt.ended'), 30_000);
    const view = await plane.client.getBudget(job.id);
    const short = view.resumeNeeds?.short ?? [];
    expect(short).toHaveLength(1);
    const top = await plane.client.topUpBudget(job.id, short[0]!.shortMicros / 1_000_000);
    expect(top.resumed).toEqual([job.id]);
    // Attempt 2 runs until its next call does not fit: exactly the room asked for holds its first
    // call (Claude Code's resumed request carries the prompt again, ~1 KB more than the refused
    // one: a top-up of the refused call's worst case alone got that call refused at once).
    const again = await waitFor('attempt 2 to end', async () => {
      const j = await plane.client.getJob(job.id);
      return j.attempt === 2 && ['paused', 'succeeded', 'failed', 'cancelled', 'lost'].includes(j.status) ? j : null;
    }, 120_000, 200);
    expect(again.status).toBe('paused');
    const [row] = (await plane.store.costRollup({ by: 'job', since: 0 })).filter((r) => r.key === String(job.id));
    // attempt 1: one served call and the refused one; attempt 2: served calls, then one refused
    expect(row!.refusedCalls).toBe(2);
    expect(row!.calls - row!.refusedCalls).toBeGreaterThanOrEqual(2);
  }, 240_000);
});
