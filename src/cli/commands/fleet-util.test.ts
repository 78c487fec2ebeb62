import { describe, expect, it } from 'vitest';
import type { FlotillaClient } from '../../client/index.js';
import type { Runner } from '../../protocol/index.js';
import { keptText, resolveRunner, slotsText } from './fleet-util.js';

const runner = (id: number, name: string, status: Runner['status']): Runner => ({
  id,
  name,
  labels: {},
  status,
  capacity: 1,
  runningJobs: [],
  version: null,
  lastHeartbeatAt: null,
  createdAt: '2027-01-01T00:00:00.000Z',
});
const client = (runners: Runner[]) => ({ listRunners: async () => runners }) as unknown as FlotillaClient;

describe('resolveRunner', () => {
  it('takes an id, a unique name, or the one runner of that name that is not revoked', async () => {
    const c = client([runner(1, 'box', 'revoked'), runner(2, 'box', 'online'), runner(3, 'old', 'revoked'), runner(4, 'old', 'revoked')]);
    expect(await resolveRunner(c, '7')).toBe(7);
    expect(await resolveRunner(c, 'box')).toBe(2);
    await expect(resolveRunner(c, 'old')).rejects.toThrow(/^2 runners are named "old" \(ids 3, 4\); give the id$/);
    await expect(resolveRunner(c, 'none')).rejects.toMatchObject({ message: 'no runner named "none" (flotilla runners lists them)', code: 'not_found', status: 404 });
  });
});

describe('slotsText and keptText: the slots idle tasks keep', () => {
  it('`0/2 +1 kept` in the list, the task and until in `runners show`; nothing when none is kept', () => {
    const r = { ...runner(1, 'gpu-1', 'online'), capacity: 2, slotsUsed: 0, keptSlots: [{ taskId: 5, until: '2027-01-01T01:00:00.000Z' }] };
    expect([slotsText(r), keptText(r)]).toEqual(['0/2 +1 kept', '; 1 kept by idle task 5 until 2027-01-01T01:00:00.000Z (tasks suspend ID frees one)']);
    const two = { ...r, keptSlots: [...r.keptSlots, { taskId: 9, until: '2027-01-01T02:00:00.000Z' }] };
    expect([slotsText(two), keptText(two)]).toEqual(['0/2 +2 kept', '; 2 kept by idle tasks 5 until 2027-01-01T01:00:00.000Z, 9 until 2027-01-01T02:00:00.000Z (tasks suspend ID frees one)']);
    const none = { ...r, slotsUsed: 1, keptSlots: [] };
    expect([slotsText(none), keptText(none)]).toEqual(['1/2', '']);
  });
});
