import { describe, expect, it } from 'vitest';
import type { JobRow, RunnerRow } from '../store/types.js';
import { Job, Runner } from '../protocol/index.js';
import { jobView, runnerStatus, runnerView } from './views.js';

const T = 1_800_000_000_000; // 2027-01-15T08:00:00.000Z
const runner: RunnerRow = { id: 1, name: 'r', labels: { os: 'linux' }, capacity: 2, version: '1', connected: true, offline: false, lastHeartbeatAt: T, createdAt: T - 1000, hold: null, revokedAt: null, boundLabels: {}, browserSlots: 1, ownerCapacity: null, ownerBrowserSlots: null };

describe('views', () => {
  it('converts job rows to the protocol Job with ISO times', () => {
    const row: JobRow = {
      id: 7, parentId: null, rootId: 7, agent: 'a', agentVersion: '1', input: { repo: 'x' }, status: 'running', endReason: null, error: null,
      priority: 0, selector: {}, runnerId: 1, attempt: 1, budgetMicros: 2_000_000, sessionId: 's', resumeSessionId: null, result: null,
      createdAt: T, assignedAt: T + 1, startedAt: T + 2, finishedAt: null,
    };
    const v = jobView(row);
    expect(v).toMatchObject({ createdAt: '2027-01-15T08:00:00.000Z', assignedAt: '2027-01-15T08:00:00.001Z', startedAt: '2027-01-15T08:00:00.002Z', finishedAt: null });
    expect('usage' in v).toBe(false);
    expect(Job.parse(v)).toEqual(v);
    expect('resumeSessionId' in v).toBe(false);
  });

  it('computes runner status on the server clock', () => {
    expect(runnerStatus(runner, 0, T + 20_000, 20_000)).toBe('online');
    expect(runnerStatus(runner, 1, T + 20_000, 20_000)).toBe('busy');
    expect(runnerStatus(runner, 0, T + 20_001, 20_000)).toBe('offline');
    expect(runnerStatus({ ...runner, offline: true }, 0, T, 20_000)).toBe('offline');
    expect(runnerStatus({ ...runner, connected: false }, 0, T, 20_000)).toBe('offline');
    expect(runnerStatus({ ...runner, lastHeartbeatAt: null }, 0, T, 20_000)).toBe('offline');
    // Revoked is its own status, whatever else holds (connected or not, held, jobs).
    expect(runnerStatus({ ...runner, revokedAt: T }, 1, T, 20_000)).toBe('revoked');
    expect(runnerStatus({ ...runner, revokedAt: T, connected: false, hold: { until: T + 1, reason: 'x', kind: 'manual' } }, 0, T, 20_000)).toBe('revoked');
    const v = runnerView(runner, [3], T, 20_000);
    expect(Runner.parse(v)).toEqual(v);
    expect(v).toMatchObject({ status: 'busy', runningJobs: [3], slotsUsed: 1, lastHeartbeatAt: '2027-01-15T08:00:00.000Z' });
  });

  it('counts only the slots jobs hold (an agent with holds: none takes none)', () => {
    const none = runnerView({ ...runner, capacity: 1 }, [5], T, 20_000, [{ holds: 'none', workspace: 5 }]);
    expect(none).toMatchObject({ status: 'online', runningJobs: [5], slotsUsed: 0, capacity: 1 });
    expect(Runner.parse(none)).toEqual(none);
    const mixed = runnerView(runner, [5, 6], T, 20_000, [{ holds: 'none', workspace: 5 }, { holds: 'browser', workspace: 6 }]);
    expect(mixed).toMatchObject({ status: 'busy', slotsUsed: 1 });
    const whole = runnerView(runner, [7], T, 20_000, [{ holds: 'runner', workspace: 7 }]);
    expect(whole).toMatchObject({ status: 'busy', slotsUsed: 2 });
  });
});
