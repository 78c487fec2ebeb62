import { useState } from 'react';
import { client, errorText, useApi, type Runner } from '../api.js';
import { ago, duration, labelsText, when } from '../format.js';
import { Link } from '../router.js';
import { ADMIN_ONLY, useSession } from '../session.js';
import { JobStatusBadge, STATUS_CLASS } from '../components/status.js';
import { CapacityCard, browserSlotsOf } from '../components/runner-capacity.js';
import { RotateTokenCard } from '../components/runner-token.js';
import { RunnerActivity } from '../components/runner-activity.js';
import { KeptSlots } from '../components/kept-slots.js';

const DURATIONS = ['15m', '1h', '3h', '6h', '1d'] as const;
type HoldFor = (typeof DURATIONS)[number];

/** Time left on an active hold (`59m 58s`), or null when none. */
export function holdLeft(r: Pick<Runner, 'hold'>, now = Date.now()): string | null {
  if (!r.hold) return null;
  const left = Date.parse(r.hold.until) - now;
  return left > 0 ? duration(left) : null;
}

/** One runner: status, labels, capacity settings, hold (durations, extend, resume), token rotation, recent jobs, activity. */
export function RunnerPage({ id }: { id: number }) {
  const { isAdmin } = useSession();
  const detail = useApi(() => client.getRunner(id), [id], 2000);
  const [holdFor, setHoldFor] = useState<HoldFor>('1h');
  const [reason, setReason] = useState('');
  const [error, setError] = useState('');
  const act = async (f: () => Promise<unknown>) => {
    setError('');
    try {
      await f();
      detail.reload();
    } catch (e) {
      setError(errorText(e));
    }
  };
  const d = detail.data;
  if (!d) return detail.error ? <p className="error">{errorText(detail.error)}</p> : <p className="empty">Loading runner #{id}…</p>;
  const r = d.runner;
  const left = holdLeft(r);
  return (
    <section>
      <div className="bar">
        <h1>{r.name}</h1>
        <span className={`status ${STATUS_CLASS[r.status] ?? ''}`} data-testid="runner-status">
          {r.status.replace('_', ' ')}
        </span>
        {left && <span data-testid="hold-left">{left} left</span>}
      </div>
      <div className="job-grid">
        <div className="card">
          <dl>
            <dt>Labels</dt>
            <dd>{labelsText(r.labels) || '—'}</dd>
            <dt>Parallel jobs</dt>
            <dd>
              <span data-testid="slots">
                {r.slotsUsed ?? r.runningJobs.length}/{r.capacity}
              </span>
              <KeptSlots runner={r} />
            </dd>
            <dt>Browser slots</dt>
            <dd data-testid="browser-slots">{browserSlotsOf(r)}</dd>
            <dt>Running</dt>
            <dd>
              {r.runningJobs.length === 0
                ? '—'
                : r.runningJobs.map((jid) => (
                    <Link key={jid} to={`/jobs/${jid}`}>
                      #{jid}{' '}
                    </Link>
                  ))}
            </dd>
            <dt>Heartbeat</dt>
            <dd>{ago(r.lastHeartbeatAt)}</dd>
            <dt>Version</dt>
            <dd>{r.version ?? '—'}</dd>
            <dt>Registered</dt>
            <dd>{when(r.createdAt)}</dd>
            {r.hold && left && (
              <>
                <dt>Hold</dt>
                <dd>
                  until {when(r.hold.until)} — {r.hold.reason}
                </dd>
              </>
            )}
          </dl>
        </div>
        <div className="card">
          <h3>Hold</h3>
          <p className="muted">A held runner gets no queued job; jobs already running go on.</p>
          <div className="inline">
            <select aria-label="hold for" value={holdFor} onChange={(e) => setHoldFor(e.target.value as HoldFor)} data-testid="hold-for">
              {DURATIONS.map((x) => (
                <option key={x}>{x}</option>
              ))}
            </select>
            <input placeholder="reason" value={reason} onChange={(e) => setReason(e.target.value)} aria-label="reason" data-testid="hold-reason" />
            <button disabled={!isAdmin} title={isAdmin ? '' : ADMIN_ONLY} onClick={() => act(() => client.holdRunner(id, { for: holdFor, reason: reason.trim() || 'held from the dashboard' }))} data-testid="hold">
              Hold
            </button>
            <button disabled={!isAdmin || !left} title={isAdmin ? '' : ADMIN_ONLY} onClick={() => act(() => client.holdRunner(id, { for: holdFor, reason: r.hold?.reason ?? 'extended', extend: true }))} data-testid="extend">
              Extend
            </button>
            <button disabled={!isAdmin || !left} title={isAdmin ? '' : ADMIN_ONLY} onClick={() => act(() => client.resumeRunner(id))} data-testid="resume">
              Resume
            </button>
          </div>
          {error && <p className="error">{error}</p>}
        </div>
        <CapacityCard runner={r} isAdmin={isAdmin} onSaved={detail.reload} />
        <RotateTokenCard runner={r} isAdmin={isAdmin} onDone={detail.reload} />
      </div>
      <div className="card">
        <h3>Recent jobs</h3>
        <table data-testid="recent-jobs">
          <tbody>
            {/* One row per attempt that ran here; an earlier attempt shows how it went here (e.g. lost) and the job's status now. */}
            {d.recentJobs.map((j) => (
              <tr key={`${j.id}:${j.attempt}`}>
                <td>
                  <Link to={`/jobs/${j.id}`}>#{j.id}</Link>
                </td>
                <td>{j.agent}</td>
                <td>attempt {j.attempt}</td>
                <td>
                  <JobStatusBadge status={j.outcome} testid="attempt-outcome" />
                  {!j.current && j.status !== j.outcome && <span className="muted"> (job {j.status} now)</span>}
                </td>
                <td>{when(j.assignedAt ?? j.createdAt)}</td>
              </tr>
            ))}
          </tbody>
        </table>
        {d.recentJobs.length === 0 && <p className="muted">No jobs yet.</p>}
      </div>
      <RunnerActivity runnerId={r.id} />
    </section>
  );
}
