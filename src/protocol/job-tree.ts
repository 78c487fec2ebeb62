import { z } from 'zod';
import { JobResult, JobStatus, JobUsage } from './job.js';

/**
 * One node of `GET /api/jobs/:id/tree` (issue 6): a job of a job tree with its metered usage
 * (tokens; `usage.costMicros` integer micro-dollars, from the gateway's ledger), the runner it
 * ran on, its structured result and its children (id ascending). `depth` counts from the tree's
 * root (root = 0). Times are ISO-8601 (server clock).
 */
export interface JobTreeNode {
  id: number;
  parentId: number | null;
  depth: number;
  agent: string;
  status: JobStatus;
  endReason: string | null;
  runnerId: number | null;
  runnerName: string | null;
  budgetMicros: number;
  usage: JobUsage;
  result: JobResult | null;
  createdAt: string;
  startedAt: string | null;
  finishedAt: string | null;
  children: JobTreeNode[];
}

export const JobTreeNode: z.ZodType<JobTreeNode> = z.lazy(() =>
  z.object({
    id: z.number().int().positive(),
    parentId: z.number().int().positive().nullable(),
    depth: z.number().int().nonnegative(),
    agent: z.string(),
    status: JobStatus,
    endReason: z.string().nullable(),
    runnerId: z.number().int().nullable(),
    runnerName: z.string().nullable(),
    budgetMicros: z.number().int().nonnegative(),
    usage: JobUsage,
    result: JobResult.nullable(),
    createdAt: z.string(),
    startedAt: z.string().nullable(),
    finishedAt: z.string().nullable(),
    children: z.array(JobTreeNode),
  }),
);

/**
 * `GET /api/jobs/:id/tree` response: the subtree rooted at the asked job (`tree`), the tree's
 * root id, `jobs` (number of nodes) and `total` (sums of every node's usage; micro-dollars and
 * tokens), i.e. what the subtree's model calls cost.
 */
export const JobTree = z.object({
  rootId: z.number().int().positive(),
  jobs: z.number().int().positive(),
  total: JobUsage,
  tree: JobTreeNode,
});
export type JobTree = z.infer<typeof JobTree>;

/**
 * Limits per job tree (issue 6), checked when a job starts a child: `maxDepth` = deepest level
 * below the root a job may sit at (root 0, its children 1, ...), `maxJobs` = jobs in the whole
 * tree, the root included.
 */
export const TreeLimits = z.object({
  maxDepth: z.number().int().min(0).max(100),
  maxJobs: z.number().int().min(1).max(100_000),
});
export type TreeLimits = z.infer<typeof TreeLimits>;
