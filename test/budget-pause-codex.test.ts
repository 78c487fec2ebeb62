/**
 * Issue 3 with the real Codex CLI (Responses wire format, scripted model, SQLite): the tree's
 * budget ($0.10) cannot cover the first call's worst case (no max_output_tokens → 32,000 ×
 * $10/MTok = $0.32 for gpt-5-codex), so the gateway answers 429 `insufficient_quota`; Codex
 * stops after that ONE refused request, the job reads `paused` (reason budget), and a top-up
 * through the API resumes it until it succeeds.
 */
import { describe, it, expect } from 'vitest';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT, planeWithRunner, waitFor, allEvents } from './helpers.js';

const HAS_CODEX = existsSync(join(ROOT, 'node_modules/@openai/codex'));

describe.skipIf(!HAS_CODEX)('budget pause and top-up with the real Codex', () => {
  const { plane } = planeWithRunner();

  it('stops after one refused call, reads paused, and a top-up lets it finish', async () => {
    const job = await plane.client.createJob({ agent: 'hello-codex', input: {}, budgetUsd: 0.1 });
    await waitFor('the attempt to end', async () => (await allEvents(plane.store, job.id)).some((e) => e.type === 'attempt.ended'), 90_000, 200);
    const paused = await plane.client.getJob(job.id);
    expect({ status: paused.status, reason: paused.endReason }).toEqual({ status: 'paused', reason: 'budget' });
    const calls = await plane.store.costRollup({ by: 'job', since: 0 });
    expect(calls[0]).toMatchObject({ key: String(job.id), calls: 1, refusedCalls: 1, costMicros: 0 });

    const top = await plane.client.topUpBudget(job.id, 1);
    expect(top.resumed).toEqual([job.id]);
    const done = await waitFor('job to finish', async () => {
      const j = await plane.client.getJob(job.id);
      return ['succeeded', 'failed', 'cancelled', 'lost'].includes(j.status) ? j : null;
    }, 120_000, 200);
    expect({ status: done.status, reason: done.endReason, error: done.error }).toEqual({ status: 'succeeded', reason: null, error: null });
    // two scripted turns after the top-up: 120 × 1.25 + 30 × 10 = 450 µ$, 160 × 1.25 + 5 × 10 = 250 µ$
    expect(done.usage).toMatchObject({ costMicros: 700 });
  }, 240_000);
});
