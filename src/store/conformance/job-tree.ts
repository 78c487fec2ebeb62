import { expect, it } from 'vitest';
import { TreeLimitError } from '../jobs.js';
import { T, newJob, type Harness } from './harness.js';

/** Store.listTreeJobs (issue 6): the root and every descendant, id ascending, no other tree. */
export function jobTreeTests(h: Harness): void {
  it('listTreeJobs: root, children and grandchildren of one tree, by id; nothing of another tree', async () => {
    const s = await h.open();
    const root = await newJob(s, { agent: 'migrator' });
    const other = await newJob(s, { agent: 'other' });
    const a = await newJob(s, { parentId: root.id, agent: 'repo-upgrader' });
    const otherChild = await newJob(s, { parentId: other.id });
    const b = await newJob(s, { parentId: root.id, agent: 'repo-upgrader' });
    const a1 = await newJob(s, { parentId: a.id, agent: 'leaf' });
    const tree = await s.listTreeJobs(root.id);
    expect(tree.map((j) => [j.id, j.parentId, j.rootId, j.agent])).toEqual([
      [root.id, null, root.id, 'migrator'],
      [a.id, root.id, root.id, 'repo-upgrader'],
      [b.id, root.id, root.id, 'repo-upgrader'],
      [a1.id, a.id, root.id, 'leaf'],
    ]);
    expect(tree[0]).toEqual(root);
    expect((await s.listTreeJobs(other.id)).map((j) => j.id)).toEqual([other.id, otherChild.id]);
    expect(await s.listTreeJobs(a1.id + 100)).toEqual([]);
    await expect(s.listTreeJobs(0)).rejects.toThrow(/rootId must be an integer >= 1/);
  });

  it('createJob with treeLimits: 12 children created at once from two instances into a tree of at most 5 jobs → exactly 4 stored, the rest refused', async () => {
    const s = await h.open();
    const s2 = await h.another(s);
    const root = await newJob(s, { agent: 'migrator' });
    const limits = { maxDepth: 2, maxJobs: 5 };
    const results = await Promise.allSettled(Array.from({ length: 12 }, (_, i) => newJob(i % 2 ? s2 : s, { parentId: root.id, treeLimits: limits })));
    const made = results.filter((r) => r.status === 'fulfilled');
    const refused = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
    expect(made.length).toBe(4);
    expect(refused.length).toBe(8);
    for (const r of refused) {
      expect(r.reason).toBeInstanceOf(TreeLimitError);
      expect((r.reason as Error).message).toBe('job count limit: the tree already holds 5 jobs and may hold at most 5 (FLOTILLA_TREE_MAX_JOBS)');
    }
    expect((await s.listTreeJobs(root.id)).length).toBe(5);
    // depth: root (0) → child (1) → grandchild (2) fits; a great-grandchild (3) does not
    const deep = await newJob(s, { agent: 'other' });
    const c1 = await newJob(s, { parentId: deep.id, treeLimits: limits });
    const c2 = await newJob(s, { parentId: c1.id, treeLimits: limits });
    await expect(newJob(s2, { parentId: c2.id, treeLimits: limits })).rejects.toThrow(/depth limit: job \d+ is at depth 2 of its tree and a child would be at depth 3, past the tree's limit of 2/);
    expect((await s.listTreeJobs(deep.id)).length).toBe(3);
  });

  it('listOrphanedJobs: not-ended jobs whose parent ended, oldest first, with the parent\'s status; ended ones left out', async () => {
    const s = await h.open();
    const root = await newJob(s, { agent: 'migrator' });
    const kids = [await newJob(s, { parentId: root.id }), await newJob(s, { parentId: root.id }), await newJob(s, { parentId: root.id })];
    const grandkid = await newJob(s, { parentId: kids[0]!.id });
    expect(await s.listOrphanedJobs(10)).toEqual([]); // root still queued
    // kids[1] ends on its own; then the root ends
    expect(await s.transitionJob(kids[1]!.id, null, ['queued'], 'cancelled', T, { endReason: 'cancelled' })).toBeTruthy();
    expect(await s.transitionJob(root.id, null, ['queued'], 'cancelled', T, { endReason: 'cancelled' })).toBeTruthy();
    expect(await s.listOrphanedJobs(10)).toEqual([
      { id: kids[0]!.id, parentId: root.id, parentStatus: 'cancelled' },
      { id: kids[2]!.id, parentId: root.id, parentStatus: 'cancelled' },
    ]);
    expect(await s.listOrphanedJobs(1)).toEqual([{ id: kids[0]!.id, parentId: root.id, parentStatus: 'cancelled' }]);
    expect(await s.transitionJob(kids[0]!.id, null, ['queued'], 'cancelled', T, { endReason: 'cancelled' })).toBeTruthy();
    expect(await s.listOrphanedJobs(10)).toEqual([
      { id: kids[2]!.id, parentId: root.id, parentStatus: 'cancelled' },
      { id: grandkid.id, parentId: kids[0]!.id, parentStatus: 'cancelled' },
    ]);
    await expect(s.listOrphanedJobs(0)).rejects.toThrow(/limit/);
  });
}
