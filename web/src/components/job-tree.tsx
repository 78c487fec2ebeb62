import { client, useApi, type JobTreeNode } from '../api.js';
import { int, usd } from '../format.js';
import { Link } from '../router.js';
import { JobStatusBadge } from './status.js';

/**
 * The job's tree (GET /api/jobs/:rootId/tree): every node with its status, agent, runner and
 * cost (µ$ from the gateway ledger), indented by depth, the open job marked. Shown only when
 * the tree has more than one job. `live` polls every 2 s.
 */
export function JobTreeCard({ rootId, jobId, live }: { rootId: number; jobId: number; live: boolean }) {
  const tree = useApi(() => client.getJobTree(rootId), [rootId], live ? 2000 : 0);
  if (tree.error) return <p className="error">Tree: {tree.error.message}</p>;
  const t = tree.data;
  if (!t || t.jobs < 2) return null;
  const rows: JobTreeNode[] = [];
  const walk = (n: JobTreeNode) => {
    rows.push(n);
    n.children.forEach(walk);
  };
  walk(t.tree);
  return (
    <div className="card" data-testid="job-tree">
      <h3>
        Tree <span className="muted">{int(t.jobs)} jobs · {usd(t.total.costMicros)}</span>
      </h3>
      <table>
        <tbody>
          {rows.map((n) => (
            <tr key={n.id} data-testid={`tree-node-${n.id}`} className={n.id === jobId ? 'here' : ''}>
              <td style={{ paddingLeft: `${0.6 + n.depth * 1.2}rem` }}>
                {n.id === jobId ? <b>#{n.id}</b> : <Link to={`/jobs/${n.id}`}>#{n.id}</Link>} {n.agent}
              </td>
              <td>
                <JobStatusBadge status={n.status} testid="node-status" />
              </td>
              <td className="muted">{n.runnerName ?? '—'}</td>
              <td className="num" data-testid="node-cost">
                {usd(n.usage.costMicros)}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
