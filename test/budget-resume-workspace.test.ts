/**
 * A job paused for budget keeps its workspace and HOME, also when its harness never reported a
 * session (a `command` agent: test/fixtures/agents/sessionless-py). Before, the resumed attempt
 * got a fresh workspace ("preparing workspace: creating an empty git repository") and an empty
 * HOME: the first attempt's work, commits included, was gone (a fresh-user tester's finding).
 * Real server, runner, gateway and Python command harness; SQLite.
 */
import { describe, expect, it } from 'vitest';
import { allEvents, planeWithRunner, waitFor } from './helpers.js';

describe('budget resume of a harness without a session', () => {
  const { plane } = planeWithRunner();

  it('the resumed attempt finds the first attempt\'s workspace and HOME', async () => {
    const job = await plane.client.createJob({ agent: 'sessionless-py', input: {}, budgetUsd: 0.05 });
    const paused = await waitFor('job to pause', async () => {
      const j = await plane.client.getJob(job.id);
      if (['succeeded', 'failed', 'cancelled', 'lost'].includes(j.status)) throw new Error(`job ended ${j.status}: ${j.endReason} ${j.error}`);
      return j.status === 'paused' ? j : null;
    }, 60_000, 100);
    expect(paused.endReason).toBe('budget');
    await waitFor('the attempt to end', async () => (await allEvents(plane.store, job.id)).some((e) => e.type === 'attempt.ended'), 30_000);
    expect((await plane.client.topUpBudget(job.id, 1)).resumed).toEqual([job.id]);
    const done = await waitFor('job to finish', async () => {
      const j = await plane.client.getJob(job.id);
      return ['succeeded', 'failed', 'cancelled', 'lost'].includes(j.status) ? j : null;
    }, 60_000, 100);
    expect({ status: done.status, error: done.error, attempt: done.attempt }).toEqual({ status: 'succeeded', error: null, attempt: 2 });
    const texts = (await allEvents(plane.store, job.id)).filter((e) => e.type === 'message').map((e) => (e.data as { text?: string }).text);
    expect(texts).toContain('resumed with my work: attempt 1 was here');
  }, 180_000);
});
