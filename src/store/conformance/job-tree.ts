import { expect, it } from 'vitest';
import { newJob, type Harness } from './harness.js';

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
}
