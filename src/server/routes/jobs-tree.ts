import type { Hono } from 'hono';
import type { JobTree, JobTreeNode, JobUsage } from '../../protocol/index.js';
import type { JobRow } from '../../store/types.js';
import type { AppEnv } from '../auth.js';
import type { ServerContext } from '../context.js';
import { apiError, idError, parseId } from '../http-util.js';
import { iso, isoOrNull } from '../views.js';
import { ZERO_USAGE as ZERO, addUsage } from '../../core/usage.js';

/**
 * Builds the subtree rooted at `id` from the tree's rows (id ascending), each node with its
 * usage and runner name. Returns the node and the number of nodes and usage sum under it
 * (itself included).
 */
export function buildTree(rows: readonly JobRow[], id: number, usage: Map<number, JobUsage>, runnerNames: Map<number, string>): { node: JobTreeNode; jobs: number; total: JobUsage } {
  const byParent = new Map<number, JobRow[]>();
  for (const r of rows) if (r.parentId !== null) byParent.set(r.parentId, [...(byParent.get(r.parentId) ?? []), r]);
  const row = rows.find((r) => r.id === id);
  if (!row) throw new Error(`job ${id} is not in its tree`);
  let depth = 0;
  for (let p = row.parentId; p !== null; p = rows.find((r) => r.id === p)?.parentId ?? null) depth += 1;
  let jobs = 0;
  let total = ZERO;
  const make = (r: JobRow, d: number): JobTreeNode => {
    const u = usage.get(r.id) ?? ZERO;
    jobs += 1;
    total = addUsage(total, u);
    return {
      id: r.id,
      parentId: r.parentId,
      depth: d,
      agent: r.agent,
      status: r.status,
      endReason: r.endReason,
      runnerId: r.runnerId,
      runnerName: r.runnerId === null ? null : (runnerNames.get(r.runnerId) ?? null),
      budgetMicros: r.budgetMicros,
      usage: u,
      result: r.result,
      createdAt: iso(r.createdAt),
      startedAt: isoOrNull(r.startedAt),
      finishedAt: isoOrNull(r.finishedAt),
      children: (byParent.get(r.id) ?? []).map((k) => make(k, d + 1)),
    };
  };
  const node = make(row, depth);
  return { node, jobs, total };
}

/**
 * `GET /api/jobs/:id/tree` → {@link JobTree}: the job and all its descendants, each with
 * status, agent, runner (id and name), tokens and cost (micro-dollars, from the gateway's
 * ledger), result and children; `total` sums the subtree. Any job of a tree may be asked for
 * (its subtree is returned; the root gives the whole tree). Bad id 400 `invalid_request`;
 * unknown job 404 `not_found`. Reads: one query for the tree, one grouped usage query per 500
 * jobs, one per distinct runner.
 */
export function mountJobTree(app: Hono<AppEnv>, ctx: ServerContext): void {
  app.get('/api/jobs/:id/tree', async (c) => {
    const id = parseId(c.req.param('id'));
    if (id === null) return idError(c, 'id', 'a job id');
    const job = await ctx.store.getJob(id);
    if (!job) return apiError(c, 404, 'not_found', `no job ${id}`);
    const rows = await ctx.store.listTreeJobs(job.rootId);
    const usage = await ctx.store.jobUsageMany(rows.map((r) => r.id));
    const names = new Map<number, string>();
    for (const rid of new Set(rows.map((r) => r.runnerId).filter((x): x is number => x !== null))) {
      const runner = await ctx.store.getRunner(rid);
      if (runner) names.set(rid, runner.name);
    }
    const built = buildTree(rows, id, usage, names);
    const body: JobTree = { rootId: job.rootId, jobs: built.jobs, total: built.total, tree: built.node };
    return c.json(body);
  });
}
