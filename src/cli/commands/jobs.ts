import { shellLine } from '../../protocol/shell-quote.js';
import { Command, Option } from 'commander';
import { JobResult, JobStatus, maskUrlPasswords, type BudgetView, type Job } from '../../protocol/index.js';
import { formatMicros } from '../../core/money.js';
import type { CliContext } from '../context.js';
import { formatJobSummary, formatTable } from '../format.js';
import { CliError, addClientOptions, clientFrom, intIn, parseJobId, wantsJson, type ClientOptions } from '../options.js';
import { cancelAndWait } from '../cancel.js';
import { describeTree } from '../tree-format.js';
import { runnerNames } from './fleet-util.js';

/**
 * `flotilla jobs [list] [--status S] [--agent A] [--limit N] [--before ID]` (env
 * FLOTILLA_JOB_STATUS, FLOTILLA_JOB_AGENT, FLOTILLA_JOB_LIMIT, FLOTILLA_JOB_BEFORE),
 * `flotilla jobs show ID [--tree]`, `flotilla jobs cancel ID`.
 */
export function registerJobs(program: Command, ctx: CliContext): void {
  const jobs = program.command('jobs').description('list, show and cancel jobs');
  const out = (s: string) => ctx.io.stdout.write(s + '\n');

  const list = jobs
    .command('list', { isDefault: true })
    .description('list jobs, newest first')
    .addOption(new Option('--status <status>', 'only jobs in this status').choices(JobStatus.options).env('FLOTILLA_JOB_STATUS'))
    .addOption(new Option('--agent <name>', 'only jobs of this agent').env('FLOTILLA_JOB_AGENT'))
    .addOption(new Option('--limit <n>', 'at most this many (1-200)').argParser(intIn(1, 200, 'limit')).default(20).env('FLOTILLA_JOB_LIMIT'))
    .addOption(new Option('--before <id>', 'only jobs older than this id (paging)').argParser(parseJobId).env('FLOTILLA_JOB_BEFORE'));
  addClientOptions(list).action(async (opts: ClientOptions & { status?: JobStatus; agent?: string; limit: number; before?: number }, self: Command) => {
    // `--agent ""` / FLOTILLA_JOB_AGENT= (it listed every job) is refused before this (options.ts refuseEmptyValues).
    const client = await clientFrom(opts);
    const page = await client.listJobs({ status: opts.status, agent: opts.agent, limit: opts.limit, before: opts.before });
    if (wantsJson(self, opts)) return void out(JSON.stringify(page));
    if (page.jobs.length === 0) return void out('no jobs');
    // The list carries usage only when the server includes it; show the column only then.
    const withCost = page.jobs.some((j) => j.usage !== undefined);
    const headers = ['id', 'agent', 'status', 'reason', 'runner', 'created', ...(withCost ? ['cost'] : [])];
    // Runners by name, as `flotilla runners` lists them (the API's job has the id).
    const names = await runnerNames(client, page.jobs.map((j) => j.runnerId));
    out(formatTable(headers, page.jobs.map((j) => jobRow(j, names).slice(0, headers.length))));
    // the next page of the same list: the filters and page size given (they were dropped: fresh-tester finding)
    if (page.nextCursor !== null) {
      const same = [...(opts.status ? ['--status', opts.status] : []), ...(opts.agent ? ['--agent', opts.agent] : []), ...(opts.limit !== 20 ? ['--limit', String(opts.limit)] : [])];
      out(`more: ${shellLine(['flotilla', 'jobs', ...same, '--before', String(page.nextCursor)])}`);
    }
  });

  const show = jobs
    .command('show')
    .description('show one job: status, usage, result (--tree: with all its descendants and the cost per job and per agent)')
    .argument('<id>', 'job id', parseJobId)
    .addOption(new Option('--tree', 'the job tree under the job: each job\'s status, runner, tokens and cost, then totals per agent').env('FLOTILLA_TREE'));
  addClientOptions(show).action(async (id: number, opts: ClientOptions & { tree?: boolean }, self: Command) => {
    const client = await clientFrom(opts);
    if (opts.tree) {
      const tree = await client.getJobTree(id);
      if (wantsJson(self, opts)) return void out(JSON.stringify({ tree }));
      return void out(describeTree(tree));
    }
    const job = await client.getJob(id);
    if (wantsJson(self, opts)) return void out(JSON.stringify({ job }));
    // issue 6: a child shows its sub-limit or the tree's budget it shares, not its own 0
    const budget = job.parentId !== null ? await client.getBudget(id) : undefined;
    // Its runner by name (the id alone if it cannot be read now).
    const runnerName = job.runnerId !== null ? await client.getRunner(job.runnerId).then((d) => d.runner.name, () => undefined) : undefined;
    out(describeJob(job, budget, runnerName));
  });

  const cancel = jobs.command('cancel').description('cancel a queued or running job').argument('<id>', 'job id', parseJobId);
  addClientOptions(cancel).action(async (id: number, opts: ClientOptions, self: Command) => {
    const client = await clientFrom(opts);
    // `cancelling`: its runner is killing the process tree; wait (up to 60 s) for the end,
    // saying so on stderr (not with --json) while it takes (a frozen runner: ~20 s).
    const json = wantsJson(self, opts);
    let runnerName: string | undefined;
    const job = await cancelAndWait(client, id, 60_000, async (j, waited) => {
      if (json) return;
      if (runnerName === undefined && j.runnerId !== null) runnerName = await client.getRunner(j.runnerId).then((d) => d.runner.name, () => `${j.runnerId}`);
      const s = Math.round(waited / 1000);
      ctx.io.stderr.write(`flotilla: job ${id} is cancelling: waiting for runner ${runnerName ?? '?'} to report its processes gone (${s} s; a runner that cannot be reached is given up after the server's heartbeat timeout)\n`);
    });
    if (wantsJson(self, opts)) return void out(JSON.stringify({ job }));
    if (job.status === 'cancelling') throw new CliError(`job ${id} is still cancelling after 60 s: its runner has not reported its processes gone`);
    if (job.status !== 'cancelled') throw new CliError(`job ${id} is ${job.status}, not cancelled`);
    out(`job ${id} cancelled`);
  });
}

function jobRow(j: Job, names: Map<number, string>): string[] {
  return [String(j.id), j.agent, j.status, j.endReason ?? '', j.runnerId === null ? '' : (names.get(j.runnerId) ?? String(j.runnerId)), j.createdAt, j.usage ? formatMicros(j.usage.costMicros) : ''];
}

/** Which budget job `j` uses (`subId`: the sub-limited job whose budget it is; absent: the tree's), as `jobs show` words it. */
function budgetWhose(j: Job, subId?: number): string {
  if (subId === undefined) return `shared with job tree ${j.rootId}`;
  if (subId === j.id) return `sub-limit within job tree ${j.rootId}`;
  return `shared with job ${subId}'s sub-limit in job tree ${j.rootId}`;
}

/**
 * Multi-line description of a job for `jobs show`: fields, the cost table, and the result (its
 * summary, then the agent's other result fields as JSON, cut at 4,000 characters).
 * `budget` (a child's `GET /api/jobs/:id/budget`): the budget it uses — its sub-limit, a
 * sub-limited ancestor's it shares, or its tree's — with `left` the least room on its path.
 * `runnerName`: the name of its runner (`runner: build-1 (5)`; without it, the id).
 * A URL's password anywhere in it (the input's repo, an error, the summary) shows as `***`
 * (`https://user:***@host/...`); `--json` prints the job as the API has it.
 */
export function describeJob(j: Job, budget?: BudgetView, runnerName?: string): string {
  const lines: string[] = [];
  const kv = (k: string, v: string | number | null | undefined) => {
    if (v !== null && v !== undefined && v !== '') lines.push(`${(k + ':').padEnd(10)} ${v}`);
  };
  kv('job', j.id);
  kv('agent', `${j.agent} (version ${j.agentVersion})`);
  kv('status', j.status);
  kv('waiting', j.waiting);
  kv('reason', j.endReason);
  kv('error', j.error);
  kv('input', JSON.stringify(j.input));
  if (budget) kv('budget', `${formatMicros(budget.budget.limitMicros)} (${budgetWhose(j, budget.budget.jobId)}, ${formatMicros(budget.budget.remainingMicros)} left)`);
  else kv('budget', formatMicros(j.budgetMicros));
  if (Object.keys(j.selector).length > 0) kv('labels', Object.entries(j.selector).map(([k, v]) => `${k}=${v}`).join(','));
  if (j.parentId !== null) kv('parent', j.parentId);
  kv('runner', runnerName !== undefined && j.runnerId !== null ? `${runnerName} (${j.runnerId})` : j.runnerId);
  kv('attempt', j.attempt);
  kv('session', j.sessionId);
  kv('created', j.createdAt);
  kv('started', j.startedAt);
  // a paused job's finishedAt is when its pause let its runner slot go (store/paused-hold.ts), not an end
  kv(j.status === 'paused' ? 'paused' : 'finished', j.finishedAt);
  if (j.result) {
    kv('branch', j.result.branch);
    kv('commit', j.result.commit);
    if (j.result.changedFiles?.length) kv('changed', j.result.changedFiles.join(', '));
    if (j.result.needsHuman) kv('attention', 'the agent says a human is needed');
  }
  lines.push('', formatJobSummary({ ...j, endReason: null, error: null }));
  if (j.result?.summary) lines.push('', j.result.summary);
  // the agent's own result fields beyond those above (a migrator's `children`: its summary said
  // they were in the result, and only --json showed them: a fresh tester)
  const more = j.result ? Object.entries(j.result).filter(([k]) => !SHOWN_RESULT_FIELDS.has(k)) : [];
  if (more.length) {
    const text = JSON.stringify(Object.fromEntries(more), null, 2);
    lines.push('', 'result:', text.length > MAX_RESULT_CHARS ? `${text.slice(0, MAX_RESULT_CHARS)}\n... (cut at ${MAX_RESULT_CHARS} characters: --json shows it whole)` : text);
  }
  return maskUrlPasswords(lines.join('\n'));
}

/** The result fields `jobs show` prints on their own lines (the protocol's named ones); any other goes under `result:` as JSON. */
const SHOWN_RESULT_FIELDS: ReadonlySet<string> = new Set(Object.keys(JobResult.shape));
/** The most characters of those other result fields `jobs show` prints. */
const MAX_RESULT_CHARS = 4000;
