/**
 * A runner killed with SIGKILL mid-job: the job leaves `running` within heartbeat timeout +
 * one sweep (here 3 s + 0.5 s) and reads `lost`; no event the server acknowledged is missing.
 */
import { describe, it, expect, afterAll } from 'vitest';
import { join } from 'node:path';
import { readFileSync } from 'node:fs';
import { tempDir, startPlane, spawnFlotilla, waitFor, allEvents, groupAlive, sleeperRunning, ROOT } from './helpers.js';

const TIMEOUT_MS = 3000;
const SWEEP_MS = 500;

/** True while `pid` exists and is not a zombie (state Z in /proc/<pid>/stat). */
function processAlive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
}

describe('runner killed mid-job', () => {
  const dir = tempDir();
  const cleanups: Array<() => Promise<void> | void> = [];
  afterAll(async () => {
    for (const c of cleanups.reverse()) await c();
    dir.cleanup();
  });

  it('marks the job lost within the heartbeat timeout and keeps every acknowledged event', async () => {
    const plane = await startPlane({ dataDir: join(dir.path, 'data'), heartbeatIntervalMs: 500, heartbeatTimeoutMs: TIMEOUT_MS, sweepIntervalMs: SWEEP_MS });
    cleanups.push(() => plane.close());
    const runner = spawnFlotilla(['runner', '--server', plane.url, '--token', await plane.registrationToken(), '--work-dir', join(dir.path, 'runner'), '--name', 'doomed'], { FLOTILLA_REPO_BASE: ROOT });
    cleanups.push(() => void runner.kill('SIGKILL'));

    const { job, events: before, pid } = await sleeperRunning(plane, 120);
    cleanups.push(() => {
      if (pid && groupAlive(pid)) process.kill(-pid, 'SIGKILL');
    });
    expect((await plane.client.getJob(job.id)).status).toBe('running');

    const t0 = Date.now();
    runner.kill('SIGKILL');
    // The harness dies with its runner (parent-death signal), so it cannot go on calling the
    // gateway while the job waits to be declared lost.
    await waitFor('the harness to die with its runner', () => !processAlive(pid), 3000, 50);
    const lost = await waitFor('job to be lost', async () => {
      const j = await plane.client.getJob(job.id);
      return j.status !== 'running' ? j : null;
    }, TIMEOUT_MS + SWEEP_MS + 5000, 50);
    const elapsed = Date.now() - t0;
    expect(lost.status).toBe('lost');
    expect(lost.endReason).toBe('runner_lost');
    // Heartbeats every 0.5 s, so the last one was at most 0.5 s before the kill.
    expect(elapsed).toBeLessThanOrEqual(TIMEOUT_MS + SWEEP_MS + 1000);

    const after = await allEvents(plane.store, job.id);
    // Every event stored (acknowledged) before the kill is still there, unchanged, in order.
    expect(after.slice(0, before.length)).toEqual(before);
    expect(after.map((e) => e.seq)).toEqual(after.map((_, i) => i + 1));
    expect(after.at(-1)).toMatchObject({ type: 'status', data: { status: 'lost' } });
    const runners = await plane.client.listRunners();
    expect(runners.find((r) => r.name === 'doomed')?.status).toBe('offline');
  });
});
