import { client, useApi } from '../api.js';
import { ago, when } from '../format.js';
import { Link } from '../router.js';

/** CSS class of an activity line by kind: what needs a person's eye stands out. */
const KIND_CLASS: Record<string, string> = { offline: 'warn', revoked: 'warn', held: 'warn', extended: 'warn', update_failed: 'warn', disconnected: 'muted' };

/**
 * A runner's activity (issue 8, runner page), newest first, from `GET /api/runners/:id/activity`:
 * status and hold changes as the server recorded them (connected, disconnected, went offline,
 * held, extended, resumed, capacity set, revoked, self-update steps) and its jobs' starts and ends with their
 * result, each job linked. Refreshed every `everyMs`.
 */
export function RunnerActivity({ runnerId, everyMs = 3000 }: { runnerId: number; everyMs?: number }) {
  const activity = useApi(() => client.getRunnerActivity(runnerId, { limit: 50 }), [runnerId], everyMs);
  const list = activity.data?.entries ?? [];
  return (
    <div className="card" data-testid="activity">
      <h3>Activity</h3>
      {activity.error && <p className="error">{activity.error.message}</p>}
      {!activity.data && !activity.error && <p className="empty">Loading…</p>}
      <table>
        <tbody>
          {list.map((e, i) => (
            <tr key={`${e.at}-${e.kind}-${i}`} data-testid="activity-row" data-kind={e.kind}>
              <td>{when(e.at)}</td>
              <td className="muted">{ago(e.at)}</td>
              <td className={KIND_CLASS[e.kind] ?? ''}>{e.jobId ? <Link to={`/jobs/${e.jobId}`}>{e.text}</Link> : e.text}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
