import { expect, it } from 'vitest';
import { T, fakeHash, newJob, type Harness } from './harness.js';

/** Issue 5 (0009): bound labels, browser slots, the owner's capacity setting, what a claimed job holds. */
export function capacityTests(h: Harness): void {
  it('capacity: a runner keeps its token labels apart; browser slots default 1 and follow hello', async () => {
    const s = await h.open();
    const r = await s.createRunner({ name: 'r', labels: { os: 'linux', extra: 'x' }, capacity: 3, credentialHash: fakeHash('c'), now: T, boundLabels: { os: 'linux' } });
    expect(r).toMatchObject({ labels: { os: 'linux', extra: 'x' }, boundLabels: { os: 'linux' }, capacity: 3, browserSlots: 1, ownerCapacity: null, ownerBrowserSlots: null });
    const plain = await s.createRunner({ name: 'p', labels: {}, capacity: 1, credentialHash: fakeHash('c'), now: T });
    expect(plain.boundLabels).toEqual({});
    expect(await s.touchRunner(r.id, T + 1, { capacity: 2, browserSlots: 4 })).toBe(true);
    // Offered 4 browser slots but only 2 parallel jobs: counted as 2.
    expect(await s.getRunner(r.id)).toMatchObject({ capacity: 2, browserSlots: 2, boundLabels: { os: 'linux' } });
    await expect(s.touchRunner(r.id, T + 2, { browserSlots: 0 })).rejects.toThrow(/browserSlots/);
  });

  it('capacity: the owner setting wins over the runner offer, null clears it, bad values change nothing', async () => {
    const s = await h.open();
    const r = await s.createRunner({ name: 'r', labels: {}, capacity: 1, credentialHash: fakeHash('c'), now: T, browserSlots: 1 });
    expect(await s.setRunnerCapacity(r.id, { capacity: 4, browserSlots: 3 })).toMatchObject({ capacity: 4, browserSlots: 3, ownerCapacity: 4, ownerBrowserSlots: 3 });
    // A hello offering 2 does not change what counts.
    await s.touchRunner(r.id, T + 1, { capacity: 2, browserSlots: 1 });
    expect(await s.getRunner(r.id)).toMatchObject({ capacity: 4, browserSlots: 3 });
    // Only browser slots given: capacity kept.
    expect(await s.setRunnerCapacity(r.id, { browserSlots: 1 })).toMatchObject({ capacity: 4, browserSlots: 1, ownerCapacity: 4 });
    await expect(s.setRunnerCapacity(r.id, { capacity: 5 })).rejects.toThrow('store: capacity must be an integer from 1 to 4 (or null to clear), got 5');
    await expect(s.setRunnerCapacity(r.id, { capacity: 2, browserSlots: 3 })).rejects.toThrow('store: browserSlots (3) must not exceed capacity (2)');
    expect(await s.getRunner(r.id)).toMatchObject({ capacity: 4, browserSlots: 1, ownerCapacity: 4, ownerBrowserSlots: 1 });
    // Cleared: the runner's own offer (capacity 2, 1 browser slot from its last hello) counts again.
    expect(await s.setRunnerCapacity(r.id, { capacity: null, browserSlots: null })).toMatchObject({ capacity: 2, browserSlots: 1, ownerCapacity: null, ownerBrowserSlots: null });
    expect(await s.setRunnerCapacity(r.id + 1000, { capacity: 1 })).toBeNull();
  });

  it('capacity: lowering only the capacity lowers the owner\'s browser slots with it; given together they must fit', async () => {
    const s = await h.open();
    const r = await s.createRunner({ name: 'r', labels: {}, capacity: 1, credentialHash: fakeHash('c'), now: T, browserSlots: 1 });
    expect(await s.setRunnerCapacity(r.id, { capacity: 3, browserSlots: 2 })).toMatchObject({ capacity: 3, browserSlots: 2, ownerBrowserSlots: 2 });
    // `--capacity auto`: the runner's own capacity (1) counts again; the owner's 2 browser slots become 1.
    expect(await s.setRunnerCapacity(r.id, { capacity: null })).toMatchObject({ capacity: 1, browserSlots: 1, ownerCapacity: null, ownerBrowserSlots: 1 });
    expect(await s.setRunnerCapacity(r.id, { capacity: 4 })).toMatchObject({ capacity: 4, browserSlots: 1, ownerBrowserSlots: 1 });
    await expect(s.setRunnerCapacity(r.id, { capacity: 1, browserSlots: 2 })).rejects.toThrow('store: browserSlots (2) must not exceed capacity (1)');
    expect(await s.getRunner(r.id)).toMatchObject({ capacity: 4, ownerBrowserSlots: 1 });
  });

  it('claimJobById: the selector test holds for keys with dots and slashes, and values that differ only in case', async () => {
    const s = await h.open();
    const r = await s.createRunner({ name: 'r', labels: {}, capacity: 4, credentialHash: fakeHash('c'), now: T });
    const j = await newJob(s, { selector: { 'gpu.model': 'A100', 'example.com/zone': 'eu' } });
    expect(await s.claimJobById(j.id, { id: r.id, labels: { gpu: 'x', 'gpu.model': 'a100', 'example.com/zone': 'eu' } }, fakeHash('t'), T + 1)).toBeNull();
    expect(await s.claimJobById(j.id, { id: r.id, labels: { 'gpu.model': 'A100' } }, fakeHash('t'), T + 1)).toBeNull();
    expect(await s.claimJobById(j.id, { id: r.id, labels: { 'gpu.model': 'A100', 'example.com/zone': 'eu', os: 'linux' } }, fakeHash('t'), T + 1)).toMatchObject({ id: j.id, status: 'assigned', attempt: 1 });
    const any = await newJob(s, { selector: {} });
    expect(await s.claimJobById(any.id, { id: r.id, labels: {} }, fakeHash('t'), T + 1)).toMatchObject({ id: any.id, status: 'assigned' });
  });

  it('capacity: a claim stores what the job holds; active assignments carry it and the workspace key', async () => {
    const s = await h.open();
    const r = await s.createRunner({ name: 'r', labels: {}, capacity: 4, credentialHash: fakeHash('c'), now: T });
    const a = await newJob(s);
    const b = await newJob(s);
    const c = await newJob(s, { workspaceJobId: a.id });
    await s.claimJobById(a.id, { id: r.id, labels: {} }, fakeHash('t'), T + 1, 'browser');
    await s.claimJobById(b.id, { id: r.id, labels: {} }, fakeHash('t'), T + 1);
    await s.claimJobById(c.id, { id: r.id, labels: {} }, fakeHash('t'), T + 1, 'none');
    expect((await s.listActiveAssignments()).map((x) => [x.jobId, x.holds, x.workspace])).toEqual([
      [a.id, 'browser', a.id],
      [b.id, 'workspace', b.id],
      [c.id, 'none', a.id],
    ]);
    const q = await newJob(s, { workspaceJobId: b.id });
    expect(await s.listQueuedForDispatch(10)).toEqual([{ id: q.id, priority: 0, selector: {}, pinnedRunnerId: null, agent: 'test-fixer', agentVersion: '1', workspaceJobId: b.id }]);
  });
}
