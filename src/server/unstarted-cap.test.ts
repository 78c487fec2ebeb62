import { expect, it } from 'vitest';
import type { Job, JobEvent } from '../protocol/index.js';
import { FakeRunner, startTestServer, waitFor } from './test-helpers.js';

// A runner that takes jobs and never starts them (it heartbeats, never reporting them) used to
// keep one for ever: each time it went back to the queue with no retry used, and came back to
// the same runner. Now the 4th time it fails (store/unstarted.ts, hub-reconcile.ts).

it('a job its runner never starts goes back to the queue 3 times, then fails runner_never_started with a status saying why', async () => {
  const t = await startTestServer({ heartbeatIntervalMs: 250, heartbeatTimeoutMs: 600, sweepIntervalMs: 60_000, dispatchIntervalMs: 100 });
  const r = await FakeRunner.start(t, { name: 'taker' });
  let beating = true;
  try {
    await r.hello({ name: 'taker' });
    const job = (await (await t.api('/api/jobs', { json: { agent: 'test-fixer', input: { repo: 'x' } } })).json()) as Job;
    // Heartbeats that never report the job, whatever it is sent.
    const beat = (async () => {
      while (beating && !r.closed) {
        r.send({ type: 'heartbeat', running: [] });
        await new Promise((res) => setTimeout(res, 100));
      }
    })();
    const ended = await waitFor(
      async () => ((await (await t.api(`/api/jobs/${job.id}`)).json()) as Job),
      (j) => j.status !== 'queued' && j.status !== 'assigned',
      15_000,
    );
    beating = false;
    await beat;
    expect(ended).toMatchObject({ status: 'failed', endReason: 'runner_never_started', attempt: 4, runnerId: r.runnerId });
    expect(ended.error).toBe(
      'assigned 4 times and never started (back in the queue 3 times without using a retry): failed, so that it does not go round for ever; the runners’ logs say why they did not start it',
    );
    const assigns = r.frames.filter((f) => f.type === 'job.assign').map((f) => (f.type === 'job.assign' ? f.assignment.attempt : 0));
    expect(assigns).toEqual([1, 2, 3, 4]);
    const statuses = (await t.store.listEvents(job.id, 0, 100)).filter((e: JobEvent) => e.type === 'status').map((e) => `${e.data.status}: ${e.data.message}`);
    const back = /^queued: runner taker never started it \(\d+(\.\d)?s\); back in the queue$/;
    expect(statuses.filter((m) => back.test(m)).length).toBe(3);
    expect(statuses[statuses.length - 1]).toMatch(/^failed: runner taker never started it \(\d+(\.\d)?s\); assigned 4 times and never started \(back in the queue 3 times without using a retry\): failed/);
    // Not assigned again afterwards.
    await new Promise((res) => setTimeout(res, 400));
    expect(r.frames.filter((f) => f.type === 'job.assign').length).toBe(4);
  } finally {
    beating = false;
    await r.close();
    await t.close();
  }
});
