import { SettingError } from './setting-env.js';
import type { TreeLimits } from '../protocol/index.js';

/**
 * Pure rules of job trees (issue 6): depth, descendants, the per-tree limits a new child must
 * respect, and the limits' configuration. A "tree job" here is any object with `id` and
 * `parentId` (a store row or an API node); lists are in id order, parents before children.
 */
export interface TreeJobRef {
  id: number;
  parentId: number | null;
}

/** Defaults of the per-tree limits: children may nest 3 levels below the root; 50 jobs per tree (root included). */
export const DEFAULT_TREE_LIMITS: TreeLimits = { maxDepth: 3, maxJobs: 50 };

/**
 * Depth of job `id` in `jobs` (root = 0, its children 1, ...).
 * @throws Error when `id` or one of its ancestors is missing from `jobs`, or the parent links loop.
 */
export function depthOf(jobs: readonly TreeJobRef[], id: number): number {
  const byId = new Map(jobs.map((j) => [j.id, j]));
  let depth = 0;
  let cur = byId.get(id);
  if (!cur) throw new Error(`job ${id} is not in the tree`);
  while (cur.parentId !== null) {
    const parent = byId.get(cur.parentId);
    if (!parent) throw new Error(`job ${cur.id}'s parent ${cur.parentId} is not in the tree`);
    depth += 1;
    if (depth > jobs.length) throw new Error(`the parent links of job ${id} loop`);
    cur = parent;
  }
  return depth;
}

/** Ids of every descendant of `id` (children, grandchildren, ...), parents before children (breadth first); [] for a leaf. */
export function descendantsOf(jobs: readonly TreeJobRef[], id: number): number[] {
  const kids = new Map<number, number[]>();
  for (const j of jobs) {
    if (j.parentId === null) continue;
    const list = kids.get(j.parentId) ?? [];
    list.push(j.id);
    kids.set(j.parentId, list);
  }
  const out: number[] = [];
  const queue = [...(kids.get(id) ?? [])];
  while (queue.length) {
    const next = queue.shift()!;
    out.push(next);
    queue.push(...(kids.get(next) ?? []));
  }
  return out;
}

/**
 * Why job `parentId` may not start another child in a tree holding `jobs`, or null when it
 * may: the child would sit deeper than `limits.maxDepth`, or the tree would hold more than
 * `limits.maxJobs` jobs. The message names the limit, the figures and the setting to change.
 */
export function childRefusal(jobs: readonly TreeJobRef[], parentId: number, limits: TreeLimits): string | null {
  const childDepth = depthOf(jobs, parentId) + 1;
  if (childDepth > limits.maxDepth) {
    return `depth limit: job ${parentId} is at depth ${childDepth - 1} of its tree and a child would be at depth ${childDepth}, past the tree's limit of ${limits.maxDepth} (FLOTILLA_TREE_MAX_DEPTH)`;
  }
  if (jobs.length + 1 > limits.maxJobs) {
    return `job count limit: the tree already holds ${jobs.length} jobs and may hold at most ${limits.maxJobs} (FLOTILLA_TREE_MAX_JOBS)`;
  }
  return null;
}

/**
 * The tree limits from the environment: `FLOTILLA_TREE_MAX_DEPTH` (0–100) and
 * `FLOTILLA_TREE_MAX_JOBS` (1–100000); each unset takes {@link DEFAULT_TREE_LIMITS}. Set blank or
 * with spaces it is refused, as the server's other settings are (README: a variable set to
 * nothing never means unset; a blank one was read as the default, fresh-tester finding).
 * @throws Error naming the variable when a value is not an integer in its range.
 */
export function treeLimitsFromEnv(env: Record<string, string | undefined>): TreeLimits {
  const read = (name: string, min: number, max: number, dflt: number): number => {
    const raw = env[name];
    if (raw === undefined) return dflt;
    if (!/^\d+$/.test(raw) || Number(raw) < min || Number(raw) > max) {
      throw new SettingError(`${name} must be an integer from ${min} to ${max}, got ${JSON.stringify(raw)}`);
    }
    return Number(raw);
  };
  return {
    maxDepth: read('FLOTILLA_TREE_MAX_DEPTH', 0, 100, DEFAULT_TREE_LIMITS.maxDepth),
    maxJobs: read('FLOTILLA_TREE_MAX_JOBS', 1, 100_000, DEFAULT_TREE_LIMITS.maxJobs),
  };
}
