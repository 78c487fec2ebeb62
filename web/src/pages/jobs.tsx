import { useState } from 'react';
import { client, useApi, type JobStatus } from '../api.js';
import { int, jobDuration, localDay, usd, when } from '../format.js';
import { Link, useRoute } from '../router.js';
import { JobStatusBadge } from '../components/status.js';

const STATUSES: JobStatus[] = ['queued', 'assigned', 'running', 'paused', 'cancelling', 'succeeded', 'failed', 'cancelled', 'lost'];

/**
 * The ledger: every job, newest first, with status, agent, runner, start, duration, tokens and
 * dollars. Filters live in the URL; paging follows the API's id cursor (`before`), so a page
 * costs the same at job 100 and at job 100,000.
 */
export function JobsPage() {
  const { query, go } = useRoute();
  const status = query.get('status') ?? '';
  const agent = query.get('agent') ?? '';
  const runner = query.get('runner') ?? '';
  const from = query.get('from') ?? '';
  const to = query.get('to') ?? '';
  const size = Number(query.get('size') ?? 50);
  const [cursors, setCursors] = useState<number[]>([]); // `before` of each page after the first
  const before = cursors[cursors.length - 1];
  const key = [status, agent, runner, from, to, size].join('|');
  const [lastKey, setLastKey] = useState(key);
  if (key !== lastKey) {
    setLastKey(key);
    setCursors([]);
  }
  const page = useApi(
    () =>
      client.listJobs({
        limit: size,
        ...(status ? { status: status as JobStatus } : {}),
        ...(agent ? { agent } : {}),
        ...(runner ? { runner: Number(runner) } : {}),
        // creation days in the browser's time zone, the zone the list shows times in (format.ts localDay)
        ...(from && localDay(from) ? { from: localDay(from)!.start } : {}),
        // the API's `to` is exclusive: the day picked is included (its next local midnight)
        ...(to && localDay(to) ? { to: localDay(to)!.next } : {}),
        ...(before !== undefined ? { before } : {}),
      }),
    [key, before],
    before === undefined ? 3000 : 0,
  );
  const agents = useApi(() => client.listAgents(), []);
  const runners = useApi(() => client.listRunners(), []);
  const runnerName = new Map((runners.data ?? []).map((r) => [r.id, r.name]));
  const set = (k: string, v: string) => {
    const q = new URLSearchParams(query);
    if (v) q.set(k, v);
    else q.delete(k);
    go(`/jobs${q.toString() ? `?${q}` : ''}`);
  };
  const jobs = page.data?.jobs ?? [];
  return (
    <section>
      <div className="bar">
        <h1>Jobs</h1>
      </div>
      <div className="filters">
        <select aria-label="status" value={status} onChange={(e) => set('status', e.target.value)} data-testid="filter-status">
          <option value="">any status</option>
          {STATUSES.map((s) => (
            <option key={s}>{s}</option>
          ))}
        </select>
        <select aria-label="agent" value={agent} onChange={(e) => set('agent', e.target.value)} data-testid="filter-agent">
          <option value="">any agent</option>
          {(agents.data ?? []).map((a) => (
            <option key={a.name}>{a.name}</option>
          ))}
          {agent && !(agents.data ?? []).some((a) => a.name === agent) && <option>{agent}</option>}
        </select>
        <select aria-label="runner" value={runner} onChange={(e) => set('runner', e.target.value)}>
          <option value="">any runner</option>
          {(runners.data ?? []).map((r) => (
            <option key={r.id} value={r.id}>
              {r.name}
            </option>
          ))}
        </select>
        <label>
          {/* the filter bounds when jobs were created, in local days; Started is when they began (a fresh tester took one for the other) */}
          created from <input type="date" title="jobs created on or after this day (your time zone)" value={from} onChange={(e) => set('from', e.target.value)} />
        </label>
        <label>
          to <input type="date" title="jobs created on or before this day (your time zone)" value={to} onChange={(e) => set('to', e.target.value)} />
        </label>
        <select aria-label="page size" value={size} onChange={(e) => set('size', e.target.value)} data-testid="page-size">
          {[50, 200].map((n) => (
            <option key={n} value={n}>
              {n} a page
            </option>
          ))}
        </select>
      </div>
      {page.error && <p className="error">{page.error.message}</p>}
      <div className="table-wrap">
        <table className="ledger" data-testid="ledger">
          <thead>
            <tr>
              <th>Job</th>
              <th>Status</th>
              <th>Agent</th>
              <th>Runner</th>
              <th>Started</th>
              <th>Duration</th>
              <th className="num">Tokens</th>
              <th className="num">Cost</th>
            </tr>
          </thead>
          <tbody>
            {jobs.map((j) => (
              <tr key={j.id} data-testid="ledger-row">
                <td>
                  <Link to={`/jobs/${j.id}`}>#{j.id}</Link>
                  {j.parentId !== null && <span className="muted"> ↳ #{j.parentId}</span>}
                </td>
                <td>
                  <JobStatusBadge status={j.status} />
                </td>
                <td>{j.agent}</td>
                <td>{j.runnerId === null ? '—' : (runnerName.get(j.runnerId) ?? `#${j.runnerId}`)}</td>
                <td>{when(j.startedAt)}</td>
                <td>{jobDuration(j)}</td>
                <td className="num">{j.usage ? int(j.usage.inputTokens + j.usage.outputTokens + j.usage.cacheReadTokens + j.usage.cacheWriteTokens) : '—'}</td>
                <td className="num">{j.usage ? usd(j.usage.costMicros) : '—'}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {page.data && jobs.length === 0 && <p className="empty">No jobs match.</p>}
      <div className="pager">
        <button disabled={cursors.length === 0} onClick={() => setCursors(cursors.slice(0, -1))} data-testid="newer">
          ← Newer
        </button>
        <span data-testid="page-number">page {cursors.length + 1}</span>
        <button disabled={!page.data?.nextCursor} onClick={() => page.data?.nextCursor && setCursors([...cursors, page.data.nextCursor])} data-testid="older">
          Older →
        </button>
      </div>
    </section>
  );
}
