import { describe, expect, it } from 'vitest';
import type { FlotillaClient } from '../../client/index.js';
import type { Runner } from '../../protocol/index.js';
import { resolveRunner } from './fleet-util.js';

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
