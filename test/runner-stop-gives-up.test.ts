/**
 * A runner stopped with Ctrl-C mid-job kills the job's processes and says it gave the attempt
 * up; the control plane ends the attempt at once (`lost`, or back in the queue with retries
 * left) with that reason. It stayed `running` until the liveness sweep, 20 s later, and then
 * read "runner X silent for 20s" (a fresh tester's finding).
 */
import { describe, it, expect, afterAll } from 'vitest';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tempDir, startPlane, spawnFlotilla, waitFor, allEvents, groupAlive, sleeperRunning, ROOT, type Plane } from './helpers.js';

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

/**
 * A job whose processes ignore SIGTERM: the runner's stop must still end within `docker stop`'s
 * 10 s (SIGKILL after STOP_GRACE_MS = 7 s, then the give-up report), and a second Ctrl-C kills
 * the job at once and still reports before the runner exits (it exited before the report:
 * the job then waited for the sweep).
 */
describe('a runner stopped while its job ignores SIGTERM', () => {
  const dir = tempDir();
  const cleanups: Array<() => Promise<void> | void> = [];
  afterAll(async () => {
    for (const c of cleanups.reverse()) await c();
    dir.cleanup();
  });
  const agents = join(dir.path, 'agents');
  mkdirSync(join(agents, 'deaf'), { recursive: true });
  writeFileSync(join(agents, 'deaf', 'agent.yaml'), `name: deaf\nharness: command\ncommand: [sh, -c, "trap '' TERM; while :; do sleep 1; done"]\n`);
  writeFileSync(join(agents, 'deaf', 'prompt.md'), 'wait');

  /** SIGTERM is in the process's ignored set (proc(5) SigIgn: bit 15 of the mask). */
  const ignoresTerm = (pid: number): boolean => {
    try {
      const m = /SigIgn:\s*([0-9a-f]+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
      return m !== null && (BigInt('0x' + m[1]) & (1n << 14n)) !== 0n;
    } catch {
      return false;
    }
  };

  async function deafJobOn(name: string) {
    const plane = await startPlane({ dataDir: join(dir.path, `data-${name}`), agentsDirs: [agents] });
    cleanups.push(() => plane.close());
    const runner = spawnFlotilla(['runner', '--server', plane.url, '--token', await plane.registrationToken(), '--work-dir', join(dir.path, `runner-${name}`), '--name', name], {});
    cleanups.push(() => void runner.kill('SIGKILL'));
    const job = await plane.client.createJob({ agent: 'deaf', input: {}, priority: 0 });
    const pid = await waitFor('the deaf job to start', async () => {
      const started = (await allEvents(plane.store, job.id)).find((e) => e.type === 'harness.started');
      return started?.type === 'harness.started' && ignoresTerm(started.data.pid) ? started.data.pid : null;
    }, 60_000, 50);
    cleanups.push(() => {
      if (groupAlive(pid)) process.kill(-pid, 'SIGKILL');
    });
    const exited = new Promise<number | null>((resolve) => runner.once('exit', (c) => resolve(c)));
    return { plane, runner, job, pid, exited };
  }

  const gaveUp = async (plane: Plane, jobId: number, name: string) => {
    const ended = await waitFor('the job to leave running', async () => {
      const j = await plane.client.getJob(jobId);
      return j.status !== 'running' ? j : null;
    }, 5_000, 50);
    expect(ended).toMatchObject({ status: 'lost', endReason: 'runner_lost', error: `runner ${name} gave the attempt up: runner stopped` });
  };

  it('SIGTERM: SIGKILL after 7 s, the give-up said, the runner gone within 10 s (docker stop)', async () => {
    const { plane, runner, job, pid, exited } = await deafJobOn('deaf-term');
    // registered: its spent registration token is not in what `ps` shows (argv-token.ts)
    const cmdline = readFileSync(`/proc/${runner.pid}/cmdline`, 'utf8').replace(/\0+/g, ' ').trim();
    expect(cmdline).toMatch(/^flotilla runner --server http:\/\/127\.0\.0\.1:\d+ --work-dir \S+ --name deaf-term$/);
    const t0 = Date.now();
    runner.kill('SIGTERM');
    expect(await exited, runner.output()).toBe(0);
    const took = Date.now() - t0;
    expect(took).toBeGreaterThanOrEqual(6_900); // the grace was given
    expect(took).toBeLessThan(10_000);
    await waitFor("the job's process group to be gone (a zombie may wait for init)", () => !groupAlive(pid), 3_000, 50);
    await gaveUp(plane, job.id, 'deaf-term');
  }, 90_000);

  it('a second Ctrl-C kills the job at once and the runner still says it gave it up', async () => {
    const { plane, runner, job, pid, exited } = await deafJobOn('deaf-int');
    const t0 = Date.now();
    runner.kill('SIGINT');
    await waitFor('the stop to begin', () => runner.output().includes('stopping'), 5_000, 20);
    runner.kill('SIGINT');
    expect(await exited, runner.output()).toBe(0);
    expect(Date.now() - t0).toBeLessThan(3_000);
    expect(runner.output()).toContain('SIGINT again: killing the running jobs now');
    await waitFor("the job's process group to be gone (a zombie may wait for init)", () => !groupAlive(pid), 3_000, 50);
    await gaveUp(plane, job.id, 'deaf-int');
  }, 90_000);
});
