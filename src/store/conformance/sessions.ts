import { expect, it } from 'vitest';
import { T, fakeHash, newJob, newRunner, type Harness } from './harness.js';

/** Issue 4 (0004): jobs pinned to a runner (resumed sessions) and the workspace they continue in. */
export function sessionTests(h: Harness): void {
  it('claimJob / claimJobById: a job pinned to a runner goes only to that runner', async () => {
    const s = await h.open();
    const a = await newRunner(s, {}, 'a');
    const b = await newRunner(s, {}, 'b');
    const pinned = await newJob(s, { pinnedRunnerId: b.id, workspaceJobId: 7, resumeSessionId: 'sess-1', priority: 10, effortTier: 'max' });
    const free = await newJob(s, {});
    expect(pinned).toMatchObject({ pinnedRunnerId: b.id, workspaceJobId: 7, resumeSessionId: 'sess-1', effortTier: 'max' });
    expect(free).toMatchObject({ pinnedRunnerId: null, workspaceJobId: null, effortTier: null });
    // Runner a skips the higher-priority pinned job and takes the free one, then nothing.
    expect((await s.claimJob({ id: a.id, labels: {} }, fakeHash('t'), T))?.id).toBe(free.id);
    expect(await s.claimJob({ id: a.id, labels: {} }, fakeHash('t'), T)).toBeNull();
    expect(await s.claimJobById(pinned.id, { id: a.id, labels: {} }, fakeHash('t'), T)).toBeNull();
    expect((await s.getJob(pinned.id))?.status).toBe('queued');
    const got = await s.claimJob({ id: b.id, labels: {} }, fakeHash('t'), T + 1);
    expect(got).toMatchObject({ id: pinned.id, runnerId: b.id, status: 'assigned', pinnedRunnerId: b.id, workspaceJobId: 7 });
    const again = await newJob(s, { pinnedRunnerId: b.id });
    expect((await s.claimJobById(again.id, { id: b.id, labels: {} }, fakeHash('t'), T + 2))?.id).toBe(again.id);
  });
}
