import type { RunnerDetail } from '../api.js';
import { ago, when } from '../format.js';
import { Link } from '../router.js';

/** One line of a runner's activity, newest first. `at` is epoch ms (server clock, from the API's ISO times). */
export interface ActivityEntry {
  at: number;
  key: string;
  text: string;
  jobId?: number;
}

/**
 * A runner's activity from what GET /api/runners/:id reports: its registration, last
 * heartbeat, hold, revocation, and each recent job's start (created) and end, newest first.
 */
export function runnerActivity(d: RunnerDetail): ActivityEntry[] {
  const r = d.runner;
  const out: ActivityEntry[] = [{ at: Date.parse(r.createdAt), key: 'registered', text: `registered as ${r.name}` }];
  if (r.lastHeartbeatAt) out.push({ at: Date.parse(r.lastHeartbeatAt), key: 'heartbeat', text: 'last heartbeat' });
  if (r.revokedAt) out.push({ at: Date.parse(r.revokedAt), key: 'revoked', text: 'revoked' });
  if (r.hold) out.push({ at: Date.parse(r.hold.until), key: 'hold', text: `hold (${r.hold.kind}) ends — ${r.hold.reason}` });
  for (const j of d.recentJobs) {
    out.push({ at: Date.parse(j.createdAt), key: `c${j.id}`, text: `job #${j.id} ${j.agent} created${j.attempt > 1 ? ` (attempt ${j.attempt})` : ''}`, jobId: j.id });
    if (j.finishedAt) out.push({ at: Date.parse(j.finishedAt), key: `f${j.id}`, text: `job #${j.id} ${j.agent} ended ${j.status}`, jobId: j.id });
  }
  return out.filter((e) => Number.isFinite(e.at)).sort((a, b) => b.at - a.at);
}

/** The activity list (at most 30 lines). */
export function RunnerActivity({ detail }: { detail: RunnerDetail }) {
  const list = runnerActivity(detail).slice(0, 30);
  return (
    <div className="card" data-testid="activity">
      <h3>Activity</h3>
      <table>
        <tbody>
          {list.map((e) => (
            <tr key={e.key}>
              <td>{when(new Date(e.at).toISOString())}</td>
              <td className="muted">{e.at > Date.now() ? 'ahead' : ago(new Date(e.at).toISOString())}</td>
              <td>{e.jobId ? <Link to={`/jobs/${e.jobId}`}>{e.text}</Link> : e.text}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
