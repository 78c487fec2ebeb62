import { describe, expect, it } from 'vitest';
import { TaskDetail } from '../../protocol/index.js';
import { describeTask } from './tasks.js';

const detail = (runnerName: string | null) =>
  TaskDetail.parse({
    task: { id: 4, agent: 'fixer', title: 'fix it', status: 'idle', keys: [], input: {}, coalesceSeconds: 0, currentJobId: null, workspaceJobId: 9, runnerId: 3, sessionId: 's-1', turns: 1, queuedPrompts: 0, pendingEvents: 0, trailingWakeAt: null, slotHeldUntil: new Date(Date.now() + 600_000).toISOString(), error: null, createdAt: '2026-12-07T00:00:00.000Z', updatedAt: '2026-12-07T00:00:00.000Z' },
    events: [],
    runnerName,
  });

describe('describeTask', () => {
  it('names the runner holding the workspace and the kept slot as flotilla runners does: name (#id)', () => {
    const text = describeTask(detail('gpu-box'));
    expect(text).toContain('  workspace:  job 9 on runner gpu-box (#3), session s-1\n');
    expect(text).toMatch(/\n {2}slot: {7}runner gpu-box \(#3\) kept for the next turn until /);
  });

  it('says the id alone when the runner is gone or the server is older', () => {
    expect(describeTask(detail(null))).toContain('  workspace:  job 9 on runner #3, session s-1\n');
  });
});
