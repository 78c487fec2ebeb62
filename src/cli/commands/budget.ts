import { Command, Option } from 'commander';
import { formatMicros } from '../../core/money.js';
import type { BudgetView, JobStatus } from '../../protocol/index.js';
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
    const { status: jobStatus, endReason } = await client.getJob(job);
    if (wantsJson(self, opts)) return void out(JSON.stringify({ ...view, jobStatus }));
    out(describeBudget(view, opts.add, jobStatus, endReason));
  });
}

/**
 * endReason of a paused job whose resume a top-up already granted while its stopped process has
 * not exited yet (server `BUDGET_RESUME_PENDING`, store/budgets.ts): it needs no further top-up.
 */
const RESUME_PENDING = 'budget_resume';

/**
 * Human-readable lines for a {@link BudgetView}; `added` the top-up in USD; `jobStatus` the
 * status of job `v.jobId` and `endReason` its reason: `paused` adds a line saying it waits for a
 * top-up, or (reason `budget_resume`) that it resumes once its stopped process has exited.
 */
export function describeBudget(v: BudgetView, added?: number, jobStatus?: JobStatus, endReason?: string | null): string {
  const b = v.budget;
  const lines = [
    ...(added !== undefined ? [`added ${formatMicros(Math.round(added * 1_000_000))} to ${b.jobId !== undefined ? `job ${b.jobId}'s sub-limit` : `job tree ${b.rootId}`}`] : []),
    `tree:      ${b.rootId}${b.rootId !== v.jobId ? ` (job ${v.jobId} is in it)` : ''}`,
    ...(b.jobId !== undefined ? [`sub-limit: job ${b.jobId} (it and its descendants; never more than the tree has left)`] : []),
    `budget:    ${formatMicros(b.limitMicros)}`,
    `spent:     ${formatMicros(b.spentMicros)}`,
    `reserved:  ${formatMicros(b.reservedMicros)}`,
    `left:      ${formatMicros(b.remainingMicros)}`,
  ];
  // Spent past the limit (an estimate charged at settle, or a limit lowered): say by how much, so a top-up can cover it.
  const over = b.spentMicros + b.reservedMicros - b.limitMicros;
  if (over > 0) lines.push(`over by:   ${formatMicros(over)} (a top-up smaller than this leaves nothing to spend)`);
  if (v.resumed.length) lines.push(`resumed:   ${v.resumed.map((id) => `job ${id}`).join(', ')}`);
  if (jobStatus === 'paused' && endReason === RESUME_PENDING) lines.push(`paused:    job ${v.jobId} resumes as soon as its stopped process has exited (no top-up needed)`);
  else if (jobStatus === 'paused') lines.push(`paused:    job ${v.jobId} is paused for budget: a top-up resumes it (flotilla budget ${v.jobId} --add USD)`);
  return lines.join('\n');
}
