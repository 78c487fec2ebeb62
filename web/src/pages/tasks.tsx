import { useState } from 'react';
import { client, useApi, type TaskStatus } from '../api.js';
import { ago, int, usd } from '../format.js';
import { Link } from '../router.js';
import { TaskStatusBadge } from '../components/task-status.js';

const STATUSES: TaskStatus[] = ['idle', 'running', 'suspended', 'completed', 'workspace_lost'];

/** Tasks (issue 7): each with its resource keys, status, queue (prompts and events waiting for the next turn) and turns. */
export function TasksPage() {
  const [status, setStatus] = useState<TaskStatus | ''>('');
  const tasks = useApi(() => client.listTasks({ limit: 200, ...(status ? { status } : {}) }), [status], 3000);
  const list = tasks.data ?? [];
  return (
    <section>
      <div className="bar">
        <h1>Tasks</h1>
        <select aria-label="status" value={status} onChange={(e) => setStatus(e.target.value as TaskStatus | '')} data-testid="task-filter">
          <option value="">any status</option>
          {STATUSES.map((s) => (
            <option key={s} value={s}>
              {s.replace('_', ' ')}
            </option>
          ))}
        </select>
      </div>
      {tasks.error && <p className="error">{tasks.error.message}</p>}
      {!tasks.data && !tasks.error && <p className="empty">Loading…</p>}
      {tasks.data && list.length === 0 && <p className="empty">No tasks{status ? ` ${status.replace('_', ' ')}` : ''}.</p>}
      {list.length > 0 && (
        <div className="table-wrap">
          <table>
            <thead>
              <tr>
                <th>Task</th>
                <th>Status</th>
                <th>Resource keys</th>
                <th className="num">Queue</th>
                <th className="num">Turns</th>
                <th>Job</th>
                <th className="num">Spent</th>
                <th>Updated</th>
              </tr>
            </thead>
            <tbody>
              {list.map((t) => (
                <tr key={t.id} data-testid="task-row">
                  <td>
                    <Link to={`/tasks/${t.id}`}>#{t.id}</Link> {t.title || t.agent} <span className="muted">{t.title ? t.agent : ''}</span>
                  </td>
                  <td>
                    <TaskStatusBadge status={t.status} />
                  </td>
                  <td className="keys">
                    {t.keys.length === 0
                      ? '—'
                      : t.keys.map((k) => (
                          <code key={k} className="label">
                            {k}
                          </code>
                        ))}
                  </td>
                  <td className="num" data-testid="task-queue" title={`${t.queuedPrompts} prompts, ${t.pendingEvents} events waiting`}>
                    {int(t.queuedPrompts + t.pendingEvents)}
                  </td>
                  <td className="num">{int(t.turns)}</td>
                  <td>
                    {t.currentJobId ? <Link to={`/jobs/${t.currentJobId}`}>#{t.currentJobId}</Link> : '—'}
                    {t.currentJobId && t.turnJobStatus && t.turnJobStatus !== 'running' && <span className={t.turnJobStatus === 'paused' ? 'warn' : 'muted'}> {t.turnJobStatus}</span>}
                    {t.currentJobId && t.turnJobStatus !== 'paused' && t.turnPausedJobs > 0 && <span className="warn"> {t.turnPausedJobs} paused</span>}
                  </td>
                  <td className="num" data-testid="task-spent">
                    {usd(t.spentMicros)}
                    {t.budgetMicros !== null && <span className="muted"> of {usd(t.budgetMicros)}</span>}
                  </td>
                  <td className="muted">{ago(t.updatedAt)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}
