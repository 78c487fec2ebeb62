import { describe, expect, it } from 'vitest';
import { childRefusal, depthOf, descendantsOf, treeLimitsFromEnv } from './job-tree.js';

// 1 ─┬─ 2 ── 4 ── 6
//    └─ 3 ── 5
const tree = [
  { id: 1, parentId: null },
  { id: 2, parentId: 1 },
  { id: 3, parentId: 1 },
  { id: 4, parentId: 2 },
  { id: 5, parentId: 3 },
  { id: 6, parentId: 4 },
];

describe('job tree rules', () => {
  it('depthOf counts parent links to the root', () => {
    expect([1, 2, 3, 4, 5, 6].map((id) => depthOf(tree, id))).toEqual([0, 1, 1, 2, 2, 3]);
    expect(() => depthOf(tree, 9)).toThrow('job 9 is not in the tree');
  });
  it('descendantsOf lists the whole subtree, parents first', () => {
    expect(descendantsOf(tree, 1)).toEqual([2, 3, 4, 5, 6]);
    expect(descendantsOf(tree, 2)).toEqual([4, 6]);
    expect(descendantsOf(tree, 6)).toEqual([]);
  });
  it('childRefusal: depth past maxDepth, then count past maxJobs', () => {
    expect(childRefusal(tree, 4, { maxDepth: 3, maxJobs: 50 })).toBeNull(); // child at depth 3
    expect(childRefusal(tree, 6, { maxDepth: 3, maxJobs: 50 })).toMatch(/^depth limit: job 6 is at depth 3 .* at depth 4, past the tree's limit of 3/);
    expect(childRefusal(tree, 1, { maxDepth: 3, maxJobs: 7 })).toBeNull(); // 6 + 1 = 7 jobs
    expect(childRefusal(tree, 1, { maxDepth: 3, maxJobs: 6 })).toBe('job count limit: the tree already holds 6 jobs and may hold at most 6 (FLOTILLA_TREE_MAX_JOBS)');
  });
  it('treeLimitsFromEnv: defaults, values, clear errors', () => {
    expect(treeLimitsFromEnv({})).toEqual({ maxDepth: 3, maxJobs: 50 });
    expect(treeLimitsFromEnv({ FLOTILLA_TREE_MAX_DEPTH: '1', FLOTILLA_TREE_MAX_JOBS: '7' })).toEqual({ maxDepth: 1, maxJobs: 7 });
    expect(() => treeLimitsFromEnv({ FLOTILLA_TREE_MAX_JOBS: '0' })).toThrow('FLOTILLA_TREE_MAX_JOBS must be an integer from 1 to 100000, got "0"');
    expect(() => treeLimitsFromEnv({ FLOTILLA_TREE_MAX_DEPTH: 'x' })).toThrow(/FLOTILLA_TREE_MAX_DEPTH must be an integer/);
    // set blank or padded: refused, not read as the default (a script's unset variable expands to nothing)
    expect(() => treeLimitsFromEnv({ FLOTILLA_TREE_MAX_DEPTH: '' })).toThrow('FLOTILLA_TREE_MAX_DEPTH must be an integer from 0 to 100, got ""');
    expect(() => treeLimitsFromEnv({ FLOTILLA_TREE_MAX_JOBS: ' 3' })).toThrow('FLOTILLA_TREE_MAX_JOBS must be an integer from 1 to 100000, got " 3"');
  });
});
