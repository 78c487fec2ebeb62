/**
 * Output backpressure (output-hold.ts OUTPUT_HIGH_WATER): while the server stores nothing, a job
 * printing lines fast is held once 10,000 of its events wait (its writes block on the full
 * pipe), and goes on to its end, every line delivered in order, once the acks come. Before, the
 * runner read the pipe as fast as it could and held every line not stored yet: a 1 GB flood
 * took 4 GB and killed it (and `flotilla up`, whose runner is in its process). A fake control
 * plane over a real WebSocket that acks nothing until told to.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { AgentDefinition, type JobAssignment } from '../protocol/index.js';
import { OUTPUT_HIGH_WATER } from './output-hold.js';
import { MAX_IN_FLIGHT_EVENTS } from './outbox.js';
import { startFakeFleet, type FakeFleet } from './testdata/fake-fleet.js';

// far past what the high water mark, the send window and the pipe's buffer hold (30,000 ran to its end unheld)
const LINES = 100_000;
let fleet: FakeFleet;

beforeEach(async () => {
  fleet = await startFakeFleet('flotilla-backpressure-', { name: 'bp-runner', graceMs: 1000, capacity: 1 }, { ack: 'none' });
});
afterEach(() => fleet.close());

describe('output backpressure', () => {
  it('holds the job while 10,000 events wait unacknowledged; all lines arrive in order once acks come', async () => {
    const { cp } = fleet;
    const a: JobAssignment = {
      jobId: 1,
      rootId: 1,
      attempt: 1,
      agent: AgentDefinition.parse({ name: 'flood', harness: 'command', command: ['sh', '-c', `seq 1 ${LINES}; echo done`], promptText: 'flood' }),
      input: {},
      token: 'flj_backpressuretokenvalue1',
      resumeSessionId: null,
    };
    cp.send({ type: 'job.assign', assignment: a });
    // nothing acknowledged: only the send window reaches the server, and the job cannot finish
    await cp.waitFor(() => cp.events(1).length >= MAX_IN_FLIGHT_EVENTS, 20_000, 'the first window of events');
    await new Promise((r) => setTimeout(r, 1500));
    expect(cp.events(1).length).toBe(MAX_IN_FLIGHT_EVENTS);
    // the harness is held on its writes, not done (`seq` alone ends in well under a second)
    const started = cp.events(1).find((e) => e.type === 'harness.started');
    const pid = started?.type === 'harness.started' ? started.data.pid : 0;
    expect(pid).toBeGreaterThan(0);
    expect(() => process.kill(pid, 0)).not.toThrow();
    expect(OUTPUT_HIGH_WATER).toBeLessThan(LINES); // so the hold is what keeps it from its end
    // the server catches up: the job goes on to its end
    cp.ack = 'auto';
    cp.ackAll();
    // ~3 s alone (it took 23 s, and over 150 s in CI, while the fake control plane sorted every
    // stored event after each frame to look for job.finished)
    await cp.waitFor(() => cp.finished(1) !== undefined, 60_000, 'the job to finish');
    const lines = cp
      .events(1)
      .filter((e) => e.type === 'log')
      .map((e) => (e.data as { line: string }).line);
    expect(lines.length).toBe(LINES + 1);
    expect(lines.slice(0, 3)).toEqual(['1', '2', '3']);
    expect(lines.slice(-2)).toEqual([String(LINES), 'done']);
    expect(lines.every((l, i) => (i < LINES ? l === String(i + 1) : l === 'done'))).toBe(true);
    expect(cp.finished(1)!.data.status).toBe('succeeded');
  }, 120_000);
});
