import { useMemo } from 'react';
import { client, useApi, type Job } from '../api.js';
import { usd } from '../format.js';
import { Link } from '../router.js';
import { BudgetBar } from '../components/budget-bar.js';
import { TimeChart } from '../components/chart.js';

/** How many recent jobs the page sums (5 pages of 200). A server-side rollup (issue 3) replaces this. */
const JOBS_SUMMED = 1000;

async function recentJobs(): Promise<Job[]> {
  const out: Job[] = [];
  let before: number | undefined;
  while (out.length < JOBS_SUMMED) {
    const page = await client.listJobs({ limit: 200, ...(before ? { before } : {}) });
    out.push(...page.jobs);
    if (!page.nextCursor) break;
    before = page.nextCursor;
  }
  return out;
}

function sumBy(jobs: Job[], key: (j: Job) => string): Array<[string, number]> {
  const m = new Map<string, number>();
  for (const j of jobs) m.set(key(j), (m.get(key(j)) ?? 0) + (j.usage?.costMicros ?? 0));
  return [...m.entries()].sort((a, b) => b[1] - a[1]);
}

/** Spend over time by agent (chart), by agent / runner / tree (tables), and the budget of each running tree. */
export function CostsPage() {
  const jobs = useApi(recentJobs, [], 10_000);
  const all = jobs.data ?? [];
  const chart = useMemo(() => {
    const days = new Map<number, Map<string, number>>();
    const agents = new Set<string>();
    for (const j of all) {
      const day = Math.floor(Date.parse(j.createdAt) / 86_400_000) * 86_400;
      const m = days.get(day) ?? new Map<string, number>();
      m.set(j.agent, (m.get(j.agent) ?? 0) + (j.usage?.costMicros ?? 0));
      days.set(day, m);
      agents.add(j.agent);
    }
    const x = [...days.keys()].sort((a, b) => a - b);
    const series = [...agents].sort().map((a) => ({ name: a, values: x.map((d) => (days.get(d)?.get(a) ?? 0) / 1_000_000) }));
    return { x, series };
  }, [jobs.data]);
  const total = all.reduce((s, j) => s + (j.usage?.costMicros ?? 0), 0);
  const byAgent = sumBy(all, (j) => j.agent);
  const byRunner = sumBy(all, (j) => (j.runnerId === null ? 'unassigned' : `runner #${j.runnerId}`));
  const byTree = sumBy(all, (j) => String(j.rootId)).slice(0, 10);
  const running = all.filter((j) => j.parentId === null && ['queued', 'assigned', 'running', 'paused'].includes(j.status));
  const treeSpend = new Map(sumBy(all, (j) => String(j.rootId)));
  return (
    <section>
      <div className="bar">
        <h1>Costs</h1>
        <span data-testid="total-cost">{usd(total)}</span>
        <span className="muted">over the last {all.length} jobs</span>
      </div>
      {jobs.error && <p className="error">{jobs.error.message}</p>}
      <div className="card">
        <h3>Spend per day by agent</h3>
        {chart.x.length > 0 ? <TimeChart x={chart.x} series={chart.series} /> : <p className="empty">No jobs yet.</p>}
      </div>
      <div className="job-grid">
        <Table title="By agent" rows={byAgent} />
        <Table title="By runner" rows={byRunner} />
        <div className="card">
          <h3>Top trees</h3>
          <table>
            <tbody>
              {byTree.map(([root, c]) => (
                <tr key={root}>
                  <td>
                    <Link to={`/jobs/${root}`}>tree #{root}</Link>
                  </td>
                  <td className="num">{usd(c)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      </div>
      <div className="card">
        <h3>Running trees</h3>
        {running.length === 0 && <p className="muted">None running.</p>}
        {running.map((j) => (
          <div key={j.id} className="tree-budget">
            <Link to={`/jobs/${j.id}`}>
              #{j.id} {j.agent}
            </Link>
            <BudgetBar spent={treeSpend.get(String(j.id)) ?? 0} limit={j.budgetMicros} />
          </div>
        ))}
      </div>
    </section>
  );
}

function Table({ title, rows }: { title: string; rows: Array<[string, number]> }) {
  return (
    <div className="card">
      <h3>{title}</h3>
      <table>
        <tbody>
          {rows.map(([k, c]) => (
            <tr key={k}>
              <td>{k}</td>
              <td className="num">{usd(c)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
