/**
 * Cancel while the agent runs a long command: within the grace period the job's whole
 * process group (Claude Code and the `sleep` it started) is gone, and the job reads
 * `cancelled`. Its gateway token dies at once.
 */
import { describe, it, expect, afterAll } from 'vitest';
import { join } from 'node:path';
import { readFileSync } from 'node:fs';
import { tempDir, startPlane, startLocalRunner, waitFor, groupAlive, sleeperRunning } from './helpers.js';

const GRACE_MS = 3000;

describe('cancel', () => {
  const dir = tempDir();
  const cleanups: Array<() => Promise<void>> = [];
  afterAll(async () => {
    for (const c of cleanups.reverse()) await c();
    dir.cleanup();
  });

  it('kills the process group within the grace period and reads cancelled', async () => {
    const plane = await startPlane({ dataDir: join(dir.path, 'data') });
    cleanups.push(() => plane.close());
    const runner = await startLocalRunner(plane, join(dir.path, 'runner'), { graceMs: GRACE_MS });
    cleanups.push(() => runner.stop());

    // Wait until the long command is running (its tool call is recorded).
    const { job, pid } = await sleeperRunning(plane, 300);
    expect(pid).toBeGreaterThan(0);
    await new Promise((r) => setTimeout(r, 300)); // let the shell start `sleep`
    expect(groupAlive(pid)).toBe(true);
    // The harness's model key (its job token), read from its real environment.
    const env = readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0');
    const jobToken = env.find((l) => l.startsWith('ANTHROPIC_API_KEY='))!.slice('ANTHROPIC_API_KEY='.length);
    expect(jobToken).toMatch(/^flj_/);
    const callGateway = () =>
      fetch(`${plane.url}/v1/messages`, {
        method: 'POST',
        headers: { 'x-api-key': jobToken, 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
        body: JSON.stringify({ model: 'claude-sonnet-4-5', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] }),
      });
    expect((await callGateway()).status).toBe(200);

    const t0 = Date.now();
    const after = await plane.client.cancelJob(job.id);
    // `cancelling` until the runner reports the tree gone (issue 4).
    expect(after.status).toBe('cancelling');
    // The job's token stops opening the gateway at the moment of the cancel.
    expect((await callGateway()).status).toBe(401);

    let readCancelledWhileAlive = false;
    await waitFor('process group to be gone', async () => {
      const alive = groupAlive(pid);
      if (alive && (await plane.client.getJob(job.id)).status !== 'cancelling') readCancelledWhileAlive = true;
      return !alive;
    }, GRACE_MS + 2000, 50);
    const elapsed = Date.now() - t0;
    // It never read cancelled while a process of the job was alive.
    expect(readCancelledWhileAlive).toBe(false);
    await waitFor('the job to read cancelled', async () => (await plane.client.getJob(job.id)).status === 'cancelled', 20_000, 50);
    expect(elapsed).toBeLessThanOrEqual(GRACE_MS + 2000);
    const final = await plane.client.getJob(job.id);
    expect(final.status).toBe('cancelled');
    expect(final.endReason).toBe('cancelled');
  });
});
