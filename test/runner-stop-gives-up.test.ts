/**
 * A runner stopped with Ctrl-C mid-job kills the job's processes and says it gave the attempt
 * up; the control plane ends the attempt at once (`lost`, or back in the queue with retries
 * left) with that reason. It stayed `running` until the liveness sweep, 20 s later, and then
 * read "runner X silent for 20s" (a fresh tester's finding).
 */
import { describe, it, expect, afterAll } from 'vitest';
import { join } from 'node:path';
import { tempDir, startPlane, spawnFlotilla, waitFor, allEvents, groupAlive, sleeperRunning, ROOT } from './helpers.js';

describe('a runner stopped with Ctrl-C while it runs a job', () => {
  const dir = tempDir();
  const cleanups: Array<() => Promise<void> | void> = [];
  afterAll(async () => {
    for (const c of cleanups.reverse()) await c();
    dir.cleanup();
  });

  it('the job ends at once (lost: the sleeper has no retry), its status naming the stop, not a silence', async () => {
    // The default heartbeat timeout (20 s): the sweep cannot be what ends it within the test's 8 s.
    const plane = await startPlane({ dataDir: join(dir.path, 'data') });
    cleanups.push(() => plane.close());
    const runner = spawnFlotilla(['runner', '--server', plane.url, '--token', await plane.registrationToken(), '--work-dir', join(dir.path, 'runner'), '--name', 'stopper'], { FLOTILLA_REPO_BASE: ROOT });
    cleanups.push(() => void runner.kill('SIGKILL'));

    const { job, pid } = await sleeperRunning(plane, 120);
    cleanups.push(() => {
      if (pid && groupAlive(pid)) process.kill(-pid, 'SIGKILL');
    });

    const t0 = Date.now();
    runner.kill('SIGINT');
    const exit = await new Promise<number | null>((resolve) => runner.once('exit', (c) => resolve(c)));
    expect(exit, runner.output()).toBe(0);
    // its process group is gone (a zombie of it may wait a moment for init to reap it)
    await waitFor("the harness's process group to be gone", () => !groupAlive(pid), 3_000, 50);
    const ended = await waitFor('the job to leave running', async () => {
      const j = await plane.client.getJob(job.id);
      return j.status !== 'running' ? j : null;
    }, 8_000, 50);
    expect(Date.now() - t0).toBeLessThan(8_000);
    expect(ended).toMatchObject({ status: 'lost', endReason: 'runner_lost', error: 'runner stopper gave the attempt up: runner stopped' });
    const statuses = (await allEvents(plane.store, job.id)).filter((e) => e.type === 'status').map((e) => (e.type === 'status' ? e.data : null));
    expect(statuses.at(-1)).toMatchObject({ status: 'lost', message: 'runner stopper gave the attempt up, its processes are gone: runner stopped' });
  }, 90_000);
});
