import { describe, expect, it } from 'vitest';
import { keptSlotReason, type RunnerView } from './slot-wait.js';

const until = Date.parse('2030-01-01T00:10:00Z');
const r1: RunnerView = { runnerId: 1, name: 'r1', limits: { capacity: 1, browserSlots: 1 }, active: [] };

describe('keptSlotReason', () => {
  it('names the task keeping the only slot of the only matching runner, and how to free it', () => {
    expect(keptSlotReason('workspace', 99, [r1], [{ taskId: 3, runnerId: 1, workspace: 7, until }])).toBe(
      'waiting: runner r1: slot kept by task 3 until 2030-01-01T00:10:00.000Z (tasks suspend 3 frees it)',
    );
  });
  it('says nothing when the job fits anyway, the runner is full with jobs, the slot is its own, or nothing is kept', () => {
    expect(keptSlotReason('workspace', 99, [{ ...r1, limits: { capacity: 2, browserSlots: 1 } }], [{ taskId: 3, runnerId: 1, workspace: 7, until }])).toBeNull();
    expect(keptSlotReason('workspace', 99, [{ ...r1, active: [{ holds: 'workspace', workspace: 5 }] }], [{ taskId: 3, runnerId: 1, workspace: 7, until }])).toBeNull();
    expect(keptSlotReason('workspace', 7, [r1], [{ taskId: 3, runnerId: 1, workspace: 7, until }])).toBeNull();
    expect(keptSlotReason('workspace', 99, [r1], [])).toBeNull();
    expect(keptSlotReason('none', 99, [r1], [{ taskId: 3, runnerId: 1, workspace: 7, until }])).toBeNull();
  });
  it('is null when one matching runner is free of kept slots', () => {
    const r2: RunnerView = { ...r1, runnerId: 2, name: 'r2' };
    expect(keptSlotReason('workspace', 99, [r1, r2], [{ taskId: 3, runnerId: 1, workspace: 7, until }])).toBeNull();
  });
});
