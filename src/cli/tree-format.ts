import type { JobTree, JobTreeNode, JobUsage } from '../protocol/index.js';
import { ZERO_USAGE as ZERO, addUsage as add } from '../core/usage.js';
import { formatMicros } from '../core/money.js';
import { formatTable } from './format.js';

/** Every node of a (sub)tree in pre-order (a parent, then its children by id). */
export function treeNodes(root: JobTreeNode): JobTreeNode[] {
  const out: JobTreeNode[] = [];
  const walk = (n: JobTreeNode) => {
    out.push(n);
    n.children.forEach(walk);
  };
  walk(root);
  return out;
}

const usageCells = (u: JobUsage): string[] => {
  let cost = formatMicros(u.costMicros);
  if (u.estimatedCalls > 0) cost += ` (${u.estimatedCalls} estimated)`;
  return [String(u.modelCalls), String(u.inputTokens), String(u.outputTokens), String(u.cacheReadTokens), String(u.cacheWriteTokens), cost];
};

/**
 * The cost tables of a job tree (issue 6), from `GET /api/jobs/:id/tree`:
 * 1. one row per job, indented by depth: job, agent, status, runner, model calls, input /
 *    output / cache read / cache write tokens, cost ($, 6 decimals), then a `total` row;
 * 2. one row per agent with its job count (`repo-upgrader × 12`) and the same sums.
 * Rows with a failure show the end reason after the status (`failed (budget)`).
 */
export function formatTreeTables(tree: JobTree): string {
  const nodes = treeNodes(tree.tree);
  const base = tree.tree.depth;
  const jobRows = nodes.map((n) => [
    `${'  '.repeat(n.depth - base)}${n.id}`,
    n.agent,
    n.status + (n.endReason && n.status !== 'succeeded' ? ` (${n.endReason})` : ''),
    n.runnerName ?? (n.runnerId === null ? '' : String(n.runnerId)),
    ...usageCells(n.usage),
  ]);
  jobRows.push(['total', `${nodes.length} ${nodes.length === 1 ? 'job' : 'jobs'}`, '', '', ...usageCells(tree.total)]);
  const byAgent = new Map<string, { count: number; usage: JobUsage }>();
  for (const n of nodes) {
    const g = byAgent.get(n.agent) ?? { count: 0, usage: ZERO };
    byAgent.set(n.agent, { count: g.count + 1, usage: add(g.usage, n.usage) });
  }
  const agentRows = [...byAgent.entries()].map(([agent, g]) => [`${agent} × ${g.count}`, ...usageCells(g.usage)]);
  const tokens = ['model calls', 'input', 'output', 'cache read', 'cache write', 'cost'];
  return [formatTable(['job', 'agent', 'status', 'runner', ...tokens], jobRows), '', formatTable(['agent', ...tokens], agentRows)].join('\n');
}

/** `jobs show ID --tree`: the tree as indented lines (`77 repo-upgrader succeeded node-1 $0.0123 flotilla/job-77`), then {@link formatTreeTables}. */
export function describeTree(tree: JobTree): string {
  const base = tree.tree.depth;
  const lines = treeNodes(tree.tree).map((n) => {
    const parts = [`${'  '.repeat(n.depth - base)}${n.depth > base ? '⇢ ' : ''}${n.agent}`, `(job ${n.id})`, n.status + (n.endReason && n.status !== 'succeeded' ? ` (${n.endReason})` : '')];
    if (n.runnerName) parts.push(`on ${n.runnerName}`);
    parts.push(formatMicros(n.usage.costMicros));
    if (n.result?.branch) parts.push(n.result.branch);
    if (n.result?.needsHuman) parts.push('needs a human look');
    return parts.join(' ');
  });
  // issue 6: `jobs show CHILD --tree` is the child's subtree, not the whole tree
  const head = tree.tree.id === tree.rootId ? `job tree ${tree.rootId}` : `subtree of job ${tree.tree.id} (in job tree ${tree.rootId})`;
  return [`${head}: ${tree.jobs} ${tree.jobs === 1 ? 'job' : 'jobs'}, ${formatMicros(tree.total.costMicros)}`, ...lines, '', formatTreeTables(tree)].join('\n');
}
