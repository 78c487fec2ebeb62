import { Command, Option } from 'commander';
import { formatMicros } from '../../core/money.js';
import type { FlotillaClient } from '../../client/index.js';
import type { BudgetView, Job, JobStatus } from '../../protocol/index.js';
import type { CliContext } from '../context.js';
import { addClientOptions, budgetArg, clientFrom, parseJobId, wantsJson, type ClientOptions } from '../options.js';

/**
 * `flotilla budget JOB [--add USD] [--json]`: shows the budget of the job's tree (limit,
 * spent, reserved by calls in flight, left); with `--add` (env `FLOTILLA_BUDGET_ADD`) tops it
 * up first (the tree's budget, or JOB's sub-limit when it has one), which resumes in their
 * sessions the paused jobs it gave room (server budget-resume rule: store/budget-resume.ts). Says
 * when job JOB is paused for budget; `--json` adds `jobStatus` (JOB's status) to the API's view.
 * Exit 0 on success; 1 on an API error (e.g. unknown job, not an admin).
 */
export function registerBudget(program: Command, ctx: CliContext): void {
  const out = (s: string) => ctx.io.stdout.write(s + '\n');
  const cmd = program
    .command('budget')
    .description("show or top up a job tree's dollar budget; a top-up resumes jobs paused for budget")
    .argument('<job>', 'job id (any job of the tree)', parseJobId)
    .addOption(new Option('--add <usd>', 'add this many US dollars to the tree budget').env('FLOTILLA_BUDGET_ADD').argParser(budgetArg('--add')));
  addClientOptions(cmd).action(async (job: number, opts: ClientOptions & { add?: number }, self: Command) => {
    const client = await clientFrom(opts);
    const view = opts.add !== undefined ? await client.topUpBudget(job, opts.add) : await client.getBudget(job);
    // The job's status after the top-up (if any): a paused one waits for budget.
    const j = await client.getJob(job);
    const { status: jobStatus, endReason } = j;
    if (wantsJson(self, opts)) return void out(JSON.stringify({ ...view, jobStatus }));
    out(describeBudget(view, opts.add, jobStatus, endReason, await budgetBound(client, view, j)));
  });
}

/**
 * endReason of a paused job whose resume a top-up already granted while its stopped process has
 * not exited yet (server `BUDGET_RESUME_PENDING`, store/budgets.ts): it needs no further top-up.
 */
const RESUME_PENDING = 'budget_resume';

/** The budget above a sub-limited job that bounds what it has left: its name ("job tree 5", "job 7"), what it has left and its own limit, µ$. */
export interface BudgetBound {
  name: string;
  leftMicros: number;
  limitMicros: number;
}

/** µ$ a budget's own figures leave: limit − spent − reserved, never below 0. */
const ownLeft = (b: BudgetView['budget']) => Math.max(0, b.limitMicros - b.spentMicros - b.reservedMicros);

/**
 * When the API's `left` of sub-limited job `job` (view `v`: the least room on its path, issue
 * 6) is below what its own sub-limit leaves, the budget above it that bounds it: each
 * sub-limited ancestor's and the tree's budget are read (one API call per ancestor, only in
 * that case) and the one with least room is named (a tie: the nearest). Null otherwise.
 */
export async function budgetBound(client: Pick<FlotillaClient, 'getJob' | 'getBudget'>, v: BudgetView, job: Job): Promise<BudgetBound | null> {
  if (v.budget.jobId === undefined || v.budget.remainingMicros >= ownLeft(v.budget)) return null;
  let best: BudgetBound | null = null;
  const consider = (name: string, b: BudgetView['budget']) => {
    if (!best || ownLeft(b) < best.leftMicros) best = { name, leftMicros: ownLeft(b), limitMicros: b.limitMicros };
  };
  for (let cur = job.parentId, depth = 0; cur !== null && depth < 1000; depth++) {
    const a = await client.getJob(cur);
    if (a.parentId !== null && a.budgetMicros > 0) consider(`job ${a.id}`, (await client.getBudget(a.id)).budget);
    cur = a.parentId;
  }
  consider(`job tree ${job.rootId}`, (await client.getBudget(job.rootId)).budget);
  return best;
}

/**
 * Human-readable lines for a {@link BudgetView}; `added` the top-up in USD; `jobStatus` the
 * status of job `v.jobId` and `endReason` its reason: `paused` adds a line saying it waits for a
 * top-up, or (reason `budget_resume`) that it resumes once its stopped process has exited.
 * `bound` ({@link budgetBound}): the budget above a sub-limited job that bounds its `left`,
 * named on that line.
 */
export function describeBudget(v: BudgetView, added?: number, jobStatus?: JobStatus, endReason?: string | null, bound?: BudgetBound | null): string {
  const b = v.budget;
  const lines = [
    ...(added !== undefined ? [`added ${formatMicros(Math.round(added * 1_000_000))} to ${b.jobId !== undefined ? `job ${b.jobId}'s sub-limit` : `job tree ${b.rootId}`}`] : []),
    `tree:      ${b.rootId}${b.rootId !== v.jobId ? ` (job ${v.jobId} is in it)` : ''}`,
    ...(b.jobId !== undefined ? [`sub-limit: job ${b.jobId} (it and its descendants; never more than the tree has left)`] : []),
    `budget:    ${formatMicros(b.limitMicros)}`,
    `spent:     ${formatMicros(b.spentMicros)}`,
    `reserved:  ${formatMicros(b.reservedMicros)}`,
    `left:      ${formatMicros(b.remainingMicros)}${bound ? ` (bounded by ${bound.name}: ${formatMicros(bound.leftMicros)} left of its own ${formatMicros(bound.limitMicros)})` : ''}`,
  ];
  // Spent past the limit (an estimate charged at settle, or a limit lowered): say by how much, so a top-up can cover it.
  const over = b.spentMicros + b.reservedMicros - b.limitMicros;
  if (over > 0) lines.push(`over by:   ${formatMicros(over)} (a top-up smaller than this leaves nothing to spend)`);
  if (v.resumed.length) lines.push(`resumed:   ${v.resumed.map((id) => `job ${id}`).join(', ')}`);
  if (jobStatus === 'paused' && endReason === RESUME_PENDING) lines.push(`paused:    job ${v.jobId} resumes as soon as its stopped process has exited (no top-up needed)`);
  else if (jobStatus === 'paused') lines.push(`paused:    job ${v.jobId} is paused for budget: a top-up resumes it (flotilla budget ${v.jobId} --add USD)`);
  return lines.join('\n');
}
