import { useState } from 'react';
import { client, useApi, type CostRollup, type Job } from '../api.js';
import { int, usd } from '../format.js';
import { Link } from '../router.js';
import { BudgetBar } from '../components/budget-bar.js';
import { TimeChart } from '../components/chart.js';
import { perDaySeries, spendDays, windowSpan, windowStart, type DaySeries } from '../cost-series.js';

type Dimension = 'agent' | 'runner' | 'tree';
const DIMENSIONS: Dimension[] = ['agent', 'runner', 'tree'];
const WINDOWS = [7, 14, 30, 90] as const;
/** The window shown first, days: 30, as `flotilla costs` and GET /api/costs default to (`--since 30d`). */
const DEFAULT_WINDOW_DAYS = 30;
/** Running trees whose budget the page shows (one GET /api/jobs/:id/budget each). */
const MAX_TREES = 20;
/** A tree is at work while any of its jobs waits, runs or is paused for budget: its budget is live. */
const ACTIVE = ['queued', 'assigned', 'running', 'paused', 'cancelling'] as const;

/** The tables' groups: the chart's dimensions and tasks (the trees of a task's turns together). */
type Group = Dimension | 'task';

interface Rollups {
  agent: CostRollup;
  runner: CostRollup;
  tree: CostRollup;
  task: CostRollup;
  runnerNames: Map<string, string>;
}

/** The four server rollups of the window (agent, runner, tree, task) and the runners' names. */
async function loadRollups(days: number): Promise<Rollups> {
  const since = windowStart(days);
  const [agent, runner, tree, task, runners] = await Promise.all([
    client.costs({ by: 'agent', since }),
    client.costs({ by: 'runner', since }),
    client.costs({ by: 'tree', since }),
    client.costs({ by: 'task', since }),
    client.listRunners(),
  ]);
  // Only trees that are a task's turn: the rest (key `none`) is every other job.
  return { agent, runner, tree, task: { ...task, rows: task.rows.filter((x) => x.key !== 'none') }, runnerNames: new Map(runners.map((r) => [String(r.id), r.name])) };
}

/**
 * Spend per UTC day for one dimension: a `by=day` rollup, then one cumulative rollup per day with
 * spend (see cost-series.ts); `span` = the window's first day and today (epoch seconds), the
 * days the chart's axis shows.
 */
async function loadSeries(days: number, by: Dimension, runnerNames: Map<string, string>): Promise<DaySeries & { span: [number, number] }> {
  const now = Date.now();
  const byDay = await client.costs({ by: 'day', since: windowStart(days, now) });
  const list = spendDays(byDay);
  const cumulative = await Promise.all(list.map((d) => client.costs({ by, since: d })));
  return { ...perDaySeries(list, cumulative, 8, (k) => keyLabel(by, k, runnerNames)), span: windowSpan(days, now) };
}

/** Root jobs of trees still at work (a job queued, assigned, running, paused or cancelling) with their tree budgets, newest 20. */
/** Paused jobs a Running trees row names before "+N more". */
const PAUSED_SHOWN = 5;

async function loadRunningTrees(): Promise<Array<{ job: Job; spent: number; reserved: number; held: number; limit: number; paused: number[] }>> {
  const pages = await Promise.all(ACTIVE.map((status) => client.listJobs({ status, limit: 200 })));
  const roots = new Set<number>();
  for (const p of pages) for (const j of p.jobs) roots.add(j.rootId);
  const ids = [...roots].sort((a, b) => b - a).slice(0, MAX_TREES);
  return Promise.all(
    ids.map(async (id) => {
      const [job, b] = await Promise.all([client.getJob(id), client.getBudget(id)]);
      // the tree's other jobs waiting for a top-up (the budget view's pausedJobs): where a lead looks for trees that need money
      // held: room kept for resumed jobs' calls (the root's view leaves out only the root's own hold: a fresh tester saw none here)
      const held = (b.budget.heldMicros ?? 0) + (b.holders?.find((h) => h.jobId === id)?.heldMicros ?? 0);
      return { job, spent: b.budget.spentMicros, reserved: b.budget.reservedMicros, held, limit: b.budget.limitMicros, paused: b.pausedJobs };
    }),
  );
}

/**
 * A rollup key as the page says it: a runner as `name (#id)` (as `flotilla costs` says `name (id)`:
 * two runners may share a name, one revoked and one registered again under it — they read as
 * one, twice, before: a fresh tester), a tree or task by its id.
 */
function keyLabel(by: Group, key: string, runnerNames: Map<string, string>, name?: string): string {
  if (by === 'runner') {
    if (key === 'none') return 'no runner';
    const runner = runnerNames.get(key) ?? name;
    return runner ? `${runner} (#${key})` : `runner #${key}`;
  }
  if (by === 'tree') return `tree #${key}`;
  if (by === 'task') return `task #${key}${name ? ` ${name}` : ''}`;
  return key;
}

/**
 * Costs: spend per day by agent, runner or tree (uPlot), the window's totals by agent and by
 * runner, the top trees and tasks, and the budget of each running tree. Every figure is a server rollup
 * of the gateway ledger (GET /api/costs), in µ$; nothing is summed from jobs in the browser.
 */
export function CostsPage() {
  const [days, setDays] = useState<number>(DEFAULT_WINDOW_DAYS);
  const [by, setBy] = useState<Dimension>('agent');
  const rollups = useApi(() => loadRollups(days), [days], 15_000);
  const names = rollups.data?.runnerNames;
  const series = useApi(() => loadSeries(days, by, names ?? new Map()), [days, by, names?.size ?? 0], 30_000);
  const trees = useApi(loadRunningTrees, [], 10_000);
  const r = rollups.data;
  // null until loaded: a rollup that failed to load is not "No spend." (a fresh tester saw both beside the error)
  const rows = (d: Group) => (r ? r[d].rows.map((x) => ({ key: x.key, label: keyLabel(d, x.key, r.runnerNames, x.name), cost: x.costMicros, calls: x.calls - x.refusedCalls, refused: x.refusedCalls, estimated: x.estimatedCalls })) : null);
  return (
    <section>
      <div className="bar">
        <h1>Costs</h1>
        <span data-testid="total-cost">{r ? usd(r.tree.total.costMicros) : '…'}</span>
        <span className="muted">{r ? `${int(r.tree.total.calls - r.tree.total.refusedCalls)} model calls${r.tree.total.refusedCalls > 0 ? `, and ${int(r.tree.total.refusedCalls)} refused` : ''} since ${r.tree.since.slice(0, 10)} 00:00 UTC (whole days: flotilla costs --since ${r.tree.since.slice(0, 10)}; the CLI's --since ${days}d counts back from now)` : 'loading…'}</span>
        <select aria-label="window" value={days} onChange={(e) => setDays(Number(e.target.value))} data-testid="window">
          {WINDOWS.map((w) => (
            <option key={w} value={w}>
              last {w} days
            </option>
          ))}
        </select>
      </div>
      {rollups.error && <p className="error">{rollups.error.message}</p>}
      <div className="card">
        <div className="bar">
          <h3>Spend per day by</h3>
          <div className="tabs" role="tablist">
            {DIMENSIONS.map((d) => (
              <button key={d} role="tab" aria-selected={by === d} className={by === d ? 'on' : ''} onClick={() => setBy(d)} data-testid={`by-${d}`}>
                {d}
              </button>
            ))}
          </div>
        </div>
        {series.error && <p className="error">{series.error.message}</p>}
        {!series.data && !series.error && <p className="empty">Loading…</p>}
        {series.data && (series.data.x.length > 0 ? <TimeChart x={series.data.x} series={series.data.series} range={series.data.span} /> : <p className="empty">No model calls in this window.</p>)}
      </div>
      <div className="job-grid">
        <Table title="By agent" rows={rows('agent')} testid="by-agent" />
        <Table title="By runner" rows={rows('runner')} testid="by-runner" />
        <Table title="Top trees" rows={rows('tree')?.slice(0, 10) ?? null} testid="top-trees" link={(k) => `/jobs/${k}`} />
        <Table title="Top tasks" rows={rows('task')?.slice(0, 10) ?? null} testid="top-tasks" link={(k) => `/tasks/${k}`} />
      </div>
      <div className="card">
        <h3>Running trees</h3>
        {trees.error && <p className="error">{trees.error.message}</p>}
        {trees.data?.length === 0 && <p className="muted">None running.</p>}
        {trees.data?.map((t) => (
          <div key={t.job.id} className="tree-budget" data-testid={`tree-${t.job.id}`}>
            <Link to={`/jobs/${t.job.id}`}>
              #{t.job.id} {t.job.agent}
            </Link>{' '}
            <span className="muted">{t.job.status}</span>
            {t.paused.length > 0 && (
              <span className="muted" data-testid={`tree-${t.job.id}-paused`}>
                {' · '}
                {t.paused.length} paused for budget:{' '}
                {t.paused.slice(0, PAUSED_SHOWN).map((id, i) => (
                  <span key={id}>
                    {i > 0 && ', '}
                    <Link to={`/jobs/${id}`}>#{id}</Link>
                  </span>
                ))}
                {t.paused.length > PAUSED_SHOWN && ` +${t.paused.length - PAUSED_SHOWN} more`}
              </span>
            )}
            <BudgetBar spent={t.spent} reserved={t.reserved} held={t.held} limit={t.limit} />
          </div>
        ))}
      </div>
    </section>
  );
}

function Table({ title, rows: loaded, testid, link }: { title: string; rows: Array<{ key: string; label: string; cost: number; calls: number; refused: number; estimated: number }> | null; testid: string; link?: (key: string) => string }) {
  const rows = loaded ?? [];
  return (
    <div className="card" data-testid={testid}>
      <h3>{title}</h3>
      {loaded === null && <p className="muted">…</p>}
      {loaded?.length === 0 && <p className="muted">No spend.</p>}
      <table>
        <tbody>
          {rows.map((x) => (
            <tr key={x.key} data-key={x.key}>
              {/* label and calls wrap, so the cost (never wrapped) stays inside the card */}
              <td className="wrap name">{link ? <Link to={link(x.key)}>{x.label}</Link> : x.label}</td>
              <td className="num wrap words">{int(x.calls)} call{x.calls === 1 ? '' : 's'}{x.estimated > 0 && <span className="warn"> ({x.estimated} est.)</span>}{x.refused > 0 && <span className="muted"> +{x.refused} refused</span>}</td>
              <td className="num" data-testid="cost">
                {usd(x.cost)}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
