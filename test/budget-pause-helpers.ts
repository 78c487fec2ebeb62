/**
 * Helpers of the budget hold tests (budget-resume-hold.test.ts, budget-hold-lapse.test.ts): a
 * real Messages call through a test server's gateway, and a job paused for budget by one.
 */
import { expect } from 'vitest';
import type { Job } from '../src/protocol/index.js';
import type { FakeRunner, TestServer } from '../src/server/test-helpers.js';

/** A job id and its job token. */
export type Kid = { id: number; token: string };

/** A call of the job holding `token` with max_tokens 1000: at the test prices ($15 per million output) its worst case is over $0.015. */
export const messagesCall = (t: TestServer, token: string) =>
  fetch(t.url + '/v1/messages', {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': token, 'anthropic-version': '2023-06-01' },
    body: JSON.stringify({ model: 'claude-sonnet-4-5', max_tokens: 1000, messages: [{ role: 'user', content: 'go on' }] }),
  });

/** The attempt end a harness reports when its call was refused for budget (402), in session `sess-<id>-1`. */
export const refused402 = (id: number) => ({ status: 'failed' as const, reason: 'budget', error: 'API Error: 402', sessionId: `sess-${id}-1` });

/**
 * Each job's call is refused (402) and the job paused for budget; its runner `r` reports the
 * attempt ended with `finished` (a harness exiting on the refusal, or the pause's stop), and
 * the server records that end (the job's slot is freed).
 * @throws (rejects) when a call is not refused, a job not paused, or an attempt's end not recorded within ~5 s.
 */
export async function pauseOnBudget(t: TestServer, r: FakeRunner, jobs: Kid[], finished: (id: number) => { status: 'failed' | 'cancelled'; reason: string; error: string; sessionId?: string } = refused402): Promise<void> {
  for (const k of jobs) {
    const res = await messagesCall(t, k.token);
    expect(res.status).toBe(402);
    await res.arrayBuffer();
    expect((await (await t.api(`/api/jobs/${k.id}`)).json()) as Job).toMatchObject({ status: 'paused', endReason: 'budget' });
    await r.events(k.id, 1, { type: 'job.finished', data: finished(k.id) });
    await r.next('job.cancel', (f) => f.jobId === k.id, 10_000);
    for (let i = 0; (await t.store.getJob(k.id))?.finishedAt === null; i++) {
      if (i > 100) throw new Error(`job ${k.id}'s paused attempt never ended`);
      await new Promise((z) => setTimeout(z, 50));
    }
  }
}
