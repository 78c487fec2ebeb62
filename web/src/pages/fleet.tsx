import { useState } from 'react';
import { client, useApi, type Runner } from '../api.js';
import { ago, labelsText } from '../format.js';
import { Link, useRoute } from '../router.js';
import { ADMIN_ONLY, useSession } from '../session.js';
import { holdLeft } from './runner.js';
import { STATUS_CLASS } from '../components/status.js';
import { RegistrationTokens } from '../components/registration-tokens.js';
import { UpdateRunnerButton } from '../components/runner-update.js';
import { KeptSlots } from '../components/kept-slots.js';

/** The status filter's choices: every runner status the API gives (protocol RunnerStatus), `revoked` too. */
const RUNNER_STATUSES: readonly Runner['status'][] = ['online', 'busy', 'on_hold', 'provisioning', 'updating', 'offline', 'revoked'];

function RunnerCard({ r, queued, isAdmin, reload }: { r: Runner; queued: number; isAdmin: boolean; reload: () => void }) {
  return (
    <article className="card runner" data-testid={`runner-${r.id}`}>
      <header>
        <h2>
          <Link to={`/runners/${r.id}`}>{r.name}</Link>
        </h2>
        <span className={`status ${STATUS_CLASS[r.status] ?? ''}`} data-testid="runner-status">
          {r.status.replace('_', ' ')}
        </span>
      </header>
      <div className="labels">
        {Object.entries(r.labels).map(([k, v]) => (
          <span key={k} className="label">
            {k}={v}
          </span>
        ))}
        {Object.keys(r.labels).length === 0 && <span className="muted">no labels</span>}
      </div>
      <dl>
        <dt>Slots</dt>
        <dd data-testid="slots">
          {r.slotsUsed ?? r.runningJobs.length}/{r.capacity}
          <KeptSlots runner={r} />
        </dd>
        {r.browserSlots !== undefined && (
          <>
            <dt>Browsers</dt>
            <dd data-testid="browser-slots">{r.browserSlots}</dd>
          </>
        )}
        <dt>Current</dt>
        <dd>
          {r.runningJobs.length === 0
            ? '—'
            : r.runningJobs.map((id) => (
                <Link key={id} to={`/jobs/${id}`}>
                  #{id}{' '}
                </Link>
              ))}
        </dd>
        <dt>Queue</dt>
        <dd>{queued} waiting</dd>
        {holdLeft(r) && (
          <>
            <dt>Hold</dt>
            <dd data-testid="hold-left">
              {holdLeft(r)} left{r.hold?.reason ? ` — ${r.hold.reason}` : ''}
            </dd>
          </>
        )}
        <dt>Heartbeat</dt>
        <dd title={r.lastHeartbeatAt ?? ''}>{ago(r.lastHeartbeatAt)}</dd>
        {r.version && (
          <>
            <dt>Version</dt>
            <dd>{r.version}</dd>
          </>
        )}
      </dl>
      {r.status !== 'revoked' && <UpdateRunnerButton runner={r} isAdmin={isAdmin} onSent={reload} />}
    </article>
  );
}

/** The fleet: a card per runner (admins: Update), counts by status, filters (label, status, role) and search; Run job; registration tokens (list, create, revoke). */
export function FleetPage() {
  const { isAdmin } = useSession();
  const { go } = useRoute();
  const runners = useApi(() => client.listRunners(), [], 2000);
  const queued = useApi(() => client.listJobs({ status: 'queued', limit: 200 }), [], 2000);
  const [status, setStatus] = useState('');
  const [label, setLabel] = useState('');
  const [search, setSearch] = useState('');
  const all = runners.data ?? [];
  const counts = new Map<string, number>();
  for (const r of all) counts.set(r.status, (counts.get(r.status) ?? 0) + 1);
  const q = search.trim().toLowerCase();
  const [lk, lv] = label.split('=');
  const shown = all.filter(
    (r) =>
      (!status || r.status === status) &&
      (!label || (lk !== undefined && (lv === undefined ? lk in r.labels : r.labels[lk] === lv))) &&
      (!q || r.name.toLowerCase().includes(q) || labelsText(r.labels).toLowerCase().includes(q) || r.runningJobs.some((id) => `#${id}` === q)),
  );
  const labelChoices = [...new Set(all.flatMap((r) => Object.entries(r.labels).map(([k, v]) => `${k}=${v}`)))].sort();
  const queuedJobs = queued.data?.jobs ?? [];
  return (
    <section>
      <div className="bar">
        <h1>Fleet</h1>
        <div className="counts" data-testid="counts">
          <span>{all.length} runners</span>
          {[...counts.entries()].map(([s, n]) => (
            <span key={s} className={`status ${STATUS_CLASS[s] ?? ''}`}>
              {n} {s.replace('_', ' ')}
            </span>
          ))}
          <span>{queuedJobs.length >= 200 ? '200+' : queuedJobs.length} queued</span>
        </div>
        <button className="primary" disabled={!isAdmin} title={isAdmin ? 'Start a job' : ADMIN_ONLY} onClick={() => go('/run')} data-testid="run-job">
          Run job
        </button>
      </div>
      <div className="filters">
        <input placeholder="Search name, label or #job" value={search} onChange={(e) => setSearch(e.target.value)} aria-label="search" />
        <select value={status} onChange={(e) => setStatus(e.target.value)} aria-label="status">
          <option value="">any status</option>
          {RUNNER_STATUSES.map((s) => (
            <option key={s} value={s}>
              {s.replace('_', ' ')}
            </option>
          ))}
        </select>
        <select value={label} onChange={(e) => setLabel(e.target.value)} aria-label="label">
          <option value="">any label or role</option>
          {labelChoices.map((l) => (
            <option key={l} value={l}>
              {l}
            </option>
          ))}
        </select>
      </div>
      {runners.error && <p className="error">{runners.error.message}</p>}
      {runners.data && all.length === 0 && <p className="empty">No runners yet. Start one with `flotilla runner --server … --token …`.</p>}
      <div className="grid">
        {shown.map((r) => (
          <RunnerCard key={r.id} r={r} isAdmin={isAdmin} reload={runners.reload} queued={queuedJobs.filter((j) => Object.entries(j.selector).every(([k, v]) => r.labels[k] === v)).length} />
        ))}
      </div>
      <RegistrationTokens isAdmin={isAdmin} />
    </section>
  );
}
