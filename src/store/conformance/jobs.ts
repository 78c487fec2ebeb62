import { expect, it } from 'vitest';
import { T, newJob, type Harness } from './harness.js';

export function jobTests(h: Harness): void {
  it('createJob: every field, rootId for roots and descendants', async () => {
    const s = await h.open();
    const root = await s.createJob({
      parentId: null,
      agent: 'test-fixer',
      agentVersion: '3',
      input: { repo: 'examples/calc', ref: 'main' },
      selector: { os: 'linux' },
      priority: 7,
      budgetMicros: 2_500_000,
      resumeSessionId: 'sess-0',
      now: T,
    });
    expect(root).toEqual({
      id: root.id,
      parentId: null,
      rootId: root.id,
      agent: 'test-fixer',
      agentVersion: '3',
      input: { repo: 'examples/calc', ref: 'main' },
      status: 'queued',
      endReason: null,
      error: null,
      priority: 7,
      selector: { os: 'linux' },
      runnerId: null,
      attempt: 0,
      budgetMicros: 2_500_000,
      sessionId: null,
      resumeSessionId: 'sess-0',
      result: null,
      createdAt: T,
      assignedAt: null,
      startedAt: null,
      finishedAt: null,
      retriesLeft: 0,
      pinnedRunnerId: null,
      workspaceJobId: null,
      effortTier: null,
      pausedNeedMicros: null,
      resumedAt: null,
    });
    expect(await s.getJob(root.id)).toEqual(root);
    const child = await newJob(s, { parentId: root.id, agent: 'helper' });
    expect([child.parentId, child.rootId, child.resumeSessionId]).toEqual([root.id, root.id, null]);
    const grandchild = await newJob(s, { parentId: child.id });
    expect([grandchild.parentId, grandchild.rootId]).toEqual([child.id, root.id]);
    const other = await newJob(s);
    expect(other.rootId).toBe(other.id);
    expect(other.id).toBeGreaterThan(grandchild.id);

    await expect(newJob(s, { parentId: other.id + 100 })).rejects.toThrow(/parentId/);
    await expect(newJob(s, { budgetMicros: 1.5 })).rejects.toThrow(/budgetMicros/);
    expect(await s.getJob(other.id + 100)).toBeNull();
    // Nothing half-written by the failed creations.
    expect((await s.listJobs({ limit: 100 })).length).toBe(4);
  });

  it('listJobs: newest first, id cursor, status and agent filters', async () => {
    const s = await h.open();
    const agents = ['a', 'b', 'a', 'b', 'a'];
    const j = [];
    for (const agent of agents) j.push(await newJob(s, { agent }));
    const [j1, j2, j3, j4, j5] = j.map((x) => x.id) as [number, number, number, number, number];
    expect(await s.transitionJob(j2, null, ['queued'], 'cancelled', T + 1)).not.toBeNull();
    expect(await s.transitionJob(j3, null, ['queued'], 'cancelled', T + 1)).not.toBeNull();

    const ids = async (q: Parameters<typeof s.listJobs>[0]) => (await s.listJobs(q)).map((r) => r.id);
    expect(await ids({ limit: 10 })).toEqual([j5, j4, j3, j2, j1]);
    expect(await ids({ limit: 2 })).toEqual([j5, j4]);
    expect(await ids({ limit: 2, before: j4 })).toEqual([j3, j2]);
    expect(await ids({ limit: 2, before: j2 })).toEqual([j1]);
    expect(await ids({ limit: 2, before: j1 })).toEqual([]);
    expect(await ids({ limit: 10, status: 'cancelled' })).toEqual([j3, j2]);
    expect(await ids({ limit: 10, agent: 'a' })).toEqual([j5, j3, j1]);
    expect(await ids({ limit: 10, agent: 'a', status: 'queued' })).toEqual([j5, j1]);
    expect(await ids({ limit: 1, agent: 'b', status: 'queued', before: j5 })).toEqual([j4]);
    expect(await ids({ limit: 10, agent: 'zzz' })).toEqual([]);
    await expect(s.listJobs({ limit: 0 })).rejects.toThrow(/limit/);
  });
}
