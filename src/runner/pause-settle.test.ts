import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { AgentDefinition, type JobAssignment } from '../protocol/index.js';
import { startFakeFleet, type FakeFleet } from './testdata/fake-fleet.js';
import type { FakeControlPlane } from './testdata/fake-control-plane.js';

/**
 * `job.cancel` with `pause` (a budget pause, issue 3): the harness was just refused a model call
 * and usually exits on its own, so the runner lets it for `pauseSettleMs` and reports its own
 * outcome; one that keeps running is stopped as for a cancel (SIGTERM, grace, SIGKILL) and
 * reported `cancelled` with the server's reason. A plain cancel stops at once.
 */
const SETTLE_MS = 1500;
let fleet: FakeFleet;
let tmp: string;
let cp: FakeControlPlane;

beforeEach(async () => {
  fleet = await startFakeFleet('flotilla-pause-settle-', { name: 'settle-runner', graceMs: 300, pauseSettleMs: SETTLE_MS, capacity: 2 });
  ({ tmp, cp } = fleet);
});
afterEach(() => fleet.close());

const sh = (jobId: number, script: string): JobAssignment => ({
  jobId,
  rootId: jobId,
  attempt: 1,
  agent: AgentDefinition.parse({ name: 'sh', harness: 'command', command: ['sh', '-c', script], promptText: 'p' }),
  input: {},
  token: `flj_settle${jobId}secretvalue`,
  resumeSessionId: null,
});

async function pausedRun(a: JobAssignment, pause: boolean, afterCancel?: () => void) {
  cp.send({ type: 'job.assign', assignment: a });
  await cp.waitFor(() => cp.events(a.jobId).some((e) => e.type === 'harness.started'), 10_000, 'the harness to start');
  const t0 = Date.now();
  cp.send({ type: 'job.cancel', jobId: a.jobId, attempt: 1, reason: 'paused: job tree out of budget', ...(pause ? { pause: true } : {}) });
  afterCancel?.();
  await cp.waitFor(() => cp.finished(a.jobId) !== undefined, 10_000, 'the attempt to finish');
  return { ms: Date.now() - t0, finished: cp.finished(a.jobId)!.data };
}

describe('budget pause on the runner', () => {
  it('a harness that exits on its own within the settle time reports its own outcome', async () => {
    // It exits once the stop was sent (as a refused harness does), not after a fixed sleep: a
    // loaded machine must not make it miss the settle time.
    const go = join(tmp, 'refused');
    const { ms, finished } = await pausedRun(sh(1, `while [ ! -e ${go} ]; do sleep 0.01; done; echo "402 budget" >&2; exit 3`), true, () => writeFileSync(go, ''));
    expect(finished).toMatchObject({ status: 'failed', reason: 'error' });
    expect(finished.error).toMatch(/402 budget/);
    expect(ms).toBeLessThan(SETTLE_MS);
  });

  it('a harness still running after the settle time is stopped and reported cancelled with the reason', async () => {
    const { ms, finished } = await pausedRun(sh(2, 'sleep 30'), true);
    expect(finished).toMatchObject({ status: 'cancelled', reason: 'cancelled', error: 'paused: job tree out of budget' });
    expect(ms).toBeGreaterThanOrEqual(SETTLE_MS - 50);
    expect(ms).toBeLessThan(SETTLE_MS + 2000);
  });

  it('a plain cancel does not wait for the settle time', async () => {
    const { ms, finished } = await pausedRun(sh(3, 'sleep 30'), false);
    expect(finished).toMatchObject({ status: 'cancelled' });
    expect(ms).toBeLessThan(SETTLE_MS);
  });
});
