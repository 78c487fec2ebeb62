import { Command, Option } from 'commander';
import { formatMicros } from '../../core/money.js';
import { TERMINAL_STATUSES, type BudgetView, type JobStatus } from '../../protocol/index.js';
import type { CliContext } from '../context.js';
import { addClientOptions, budgetArg, clientFrom, parseJobId, refuseEmptyOptions, wantsJson, type ClientOptions } from '../options.js';

/**
 * `flotilla budget JOB [--add USD] [--json]`: shows the budget job JOB uses — its own sub-limit,
 * else its nearest sub-limited ancestor's, else its tree's — (limit, spent, reserved by calls in
 * flight, left: the least room on JOB's path, naming the budget that bounds it when another);
 * with `--add` (env `FLOTILLA_BUDGET_ADD`) tops that budget up first, which resumes in their
 * sessions the paused jobs it gave room (server budget-resume rule: store/budget-resume.ts).
 * Says when job JOB is paused for budget and which top-ups would resume it, and which other
 * jobs of its tree are; `--json` prints the API's view (with `jobStatus`, JOB's status).
 * Exit 0 on success; 1 on an API error (e.g. unknown job, not an admin, a refused top-up); 2 on
 * a usage error: a bad `--add` (options.ts usdArg: a plain decimal, no spaces), or an option
 * given empty or blank (`--server ""`, `--token ""`, `--data ""` or its variable set to "";
 * options.ts refuseEmpty), even one this call would not use.
 */
export function registerBudget(program: Command, ctx: CliContext): void {
  const out = (s: string) => ctx.io.stdout.write(s + '\n');
  const cmd = program
    .command('budget')
    .description("show or top up the dollar budget a job uses (its sub-limit, an ancestor's, or its tree's); a top-up resumes jobs paused for budget")
    .argument('<job>', 'job id (any job of the tree)', parseJobId)
    .addOption(new Option('--add <usd>', "add this many US dollars to the budget the job uses (its sub-limit, else its nearest sub-limited ancestor's, else the tree's)").env('FLOTILLA_BUDGET_ADD').argParser(budgetArg('--add')));
  addClientOptions(cmd).action(async (job: number, opts: ClientOptions & { add?: number }, self: Command) => {
    // `--data ""` with a token was let through (unused); an empty option is never "unset".
    refuseEmptyOptions(self, ['server', 'token', 'data']);
    const client = await clientFrom(opts);
    const view = opts.add !== undefined ? await client.topUpBudget(job, opts.add) : await client.getBudget(job);
    // The job's status after the top-up (if any): a paused one waits for budget.
    const { status: jobStatus, endReason } = await client.getJob(job);
    if (wantsJson(self, opts)) return void out(JSON.stringify(view));
    out(describeBudget(view, opts.add, jobStatus, endReason));
  });
}

/**
 * endReason of a paused job whose resume a top-up already granted while its stopped process has
 * not exited yet (server `BUDGET_RESUME_PENDING`, store/budgets.ts): it needs no further top-up.
 */
const RESUME_PENDING = 'budget_resume';

/** "job tree 1" or "job 2's sub-limit": a budget on a path (`jobId` absent: the tree `rootId`'s). */
const budgetName = (rootId: number, jobId?: number) => (jobId === undefined ? `job tree ${rootId}` : `job ${jobId}'s sub-limit`);

/**
 * The `paused:` line of job `v.jobId` paused for budget (endReason `budget`): from the view's
 * `resumeNeeds` (the budgets on its path short of room for its refused call, tree first), the
 * top-ups that would resume it. When none is short, or only the one `flotilla budget JOB --add`
 * raises (the view's budget), that top-up resumes it: of at least the amount it is short by,
 * when short (`a top-up of at least $0.150186 resumes it (flotilla budget 3 --add USD)`).
 */
function pausedLine(v: BudgetView): string {
  const id = v.jobId;
  const short = v.resumeNeeds?.short ?? [];
  // room held for other resumed jobs comes back by itself: say so before a top-up is paid for (fresh tester)
  const others = (v.holders ?? []).filter((h) => h.jobId !== id);
  const wait = short.length && others.length ? `; or wait: ${holderNames(others)} ${others.length === 1 ? 'holds' : 'hold'} room until ${others.length === 1 ? 'it makes its call' : 'each makes its call'} or ends${queuedLapse(others)}, and what is left then resumes it without a top-up if it fits` : '';
  if (short.length === 0 || (short.length === 1 && short[0]!.jobId === v.budget.jobId)) {
    // The one budget `--add` raises: say by how much it is short, as the two-budget text does.
    const topUp = short.length === 1 ? `a top-up of at least ${formatMicros(short[0]!.shortMicros)}${aheadPart(short[0]!) ? ` (${aheadPart(short[0]!)})` : ''}` : 'a top-up';
    return `paused:    job ${id} is paused for budget: ${topUp} resumes it (flotilla budget ${id} --add USD)${wait}`;
  }
  const need = v.resumeNeeds?.needMicros;
  // the need is the refused call grown for the resumed harness's larger request (gateway/worst-case.ts RESUME_GROWTH_BYTES)
  const call = need ? `its refused call, sent again on resuming (up to ${formatMicros(need)})` : 'its refused call';
  const names = short.map((s) => `${budgetName(v.budget.rootId, s.jobId)} (short by ${formatMicros(s.shortMicros)}${aheadPart(s) ? `, ${aheadPart(s)}` : ''})`);
  const cmds = short.map((s) => `flotilla budget ${s.jobId ?? v.budget.rootId} --add USD`);
  // outermost first, as listed (the tree is not always one of them: a fresh tester)
  const how = short.length > 1 ? 'top up each, in this order,' : 'top it up';
  return `paused:    job ${id} is paused for budget: ${call} does not fit ${names.join(' nor ')}; ${how} to resume it: ${cmds.join(', then ')}${wait}`;
}

/**
 * The part of a shortfall that is the needs of jobs paused before this one (`aheadMicros`: a
 * top-up resumes them first), in words; '' when none. A figure several times the job's own call
 * read as a mistake (fresh tester).
 */
function aheadPart(s: { aheadMicros?: number | undefined }): string {
  return s.aheadMicros ? `${formatMicros(s.aheadMicros)} of it for the jobs paused for budget before it, which resume first` : '';
}

/** "job 19 ($0.025512, queued)", joined with commas: the jobs holding room, as a budget view lists them. */
function holderNames(holders: NonNullable<BudgetView['holders']>): string {
  return holders.map((h) => `job ${h.jobId} (${formatMicros(h.heldMicros)}, ${h.status})`).join(', ');
}

/** The `held:` line: room held for other resumed jobs (`budget.heldMicros`), naming them when the server lists them; `holds:` when the job shown holds room itself. */
function heldLine(v: BudgetView): string[] {
  const mine = (v.holders ?? []).find((h) => h.jobId === v.jobId);
  const lapse = mine?.status === 'queued' && mine.lapsesAt !== undefined ? `, or until ${isoSeconds(mine.lapsesAt)} if it has not started by then` : '';
  const own = mine ? [`holds:     ${formatMicros(mine.heldMicros)} for its own call, the one it was resumed for (counted in left: its own calls may use it), until it makes it or ends${lapse}`] : [];
  if (!v.budget.heldMicros) return own;
  const others = (v.holders ?? []).filter((h) => h.jobId !== v.jobId);
  const whose = others.length ? `for ${holderNames(others)}` : 'for the calls of jobs a top-up resumed';
  return [`held:      ${formatMicros(v.budget.heldMicros)} ${whose}, each until it makes its call or ends${queuedLapse(others)}`, ...own];
}

/**
 * What of `left` is job `v.jobId`'s own hold (`ownHeldMicros`, else its `holders` entry from a
 * server older than that field): "; $0.05 of it its own hold, $0.03 for the other jobs".
 * Empty when it holds none. A holder's view counts its own hold as left (its calls may use it):
 * read alone, a root that holds showed more room than its children had (fresh tester).
 */
function ownHoldOfLeft(v: BudgetView): string {
  const own = ownHeldOf(v);
  if (own <= 0) return '';
  const left = v.budget.remainingMicros;
  // a need priced again after a price rise can hold more than is left (fresh tester: "of it" then named a part of the hold)
  if (own > left) return `; its own hold of ${formatMicros(own)} is ${formatMicros(own - left)} more than that`;
  return `; ${formatMicros(own)} of it its own hold, ${formatMicros(left - own)} for the other jobs`;
}

/** Room job `v.jobId` holds itself (`ownHeldMicros`, else its `holders` entry from a server older than that field), µ$; 0 when none. */
function ownHeldOf(v: BudgetView): number {
  return v.ownHeldMicros ?? (v.holders ?? []).find((h) => h.jobId === v.jobId)?.heldMicros ?? 0;
}

/**
 * When a holder has not started (queued): its room comes back after the server's hold time too
 * (server/budget-sweep.ts; fresh tester: the words said only "makes its call or ends"), at the
 * time the server gives (`lapsesAt`), else — a server older than that field — after
 * FLOTILLA_GATEWAY_BUDGET_HOLD_MS (fresh tester: "15 min by default" read on a server set to 15 s).
 */
function queuedLapse(holders: NonNullable<BudgetView['holders']>): string {
  const queued = holders.filter((h) => h.status === 'queued');
  if (queued.length === 0) return '';
  if (queued.some((h) => h.lapsesAt === undefined)) return ' (one still queued gives it back once it has waited FLOTILLA_GATEWAY_BUDGET_HOLD_MS, 15 min by default, to start)';
  return ` (one still queued gives it back unless it has started by then: ${queued.map((h) => `job ${h.jobId} at ${isoSeconds(h.lapsesAt!)}`).join(', ')})`;
}

/** An ISO time to the second: `2026-12-07T18:05:12Z`. */
const isoSeconds = (t: string) => t.replace(/\.\d+Z$/, 'Z');

/** When another top-up came between this one and the figures below (the server's `topUp`): what this one left the limit at. */
function afterOthers(v: BudgetView): string {
  return v.topUp && v.topUp.limitMicros !== v.budget.limitMicros ? ` (it made the budget ${formatMicros(v.topUp.limitMicros)}; another top-up at the same time made it ${formatMicros(v.budget.limitMicros)})` : '';
}

/**
 * Human-readable lines for a {@link BudgetView}; `added` the top-up in USD; `jobStatus` the
 * status of job `v.jobId` and `endReason` its reason: `paused` adds a line saying which top-ups
 * resume it ({@link pausedLine}), or (reason `budget_resume`) that it resumes once its stopped
 * process has exited; an ended job whose budget is shown (the tree's of an ended root, or its own
 * sub-limit) adds that nothing more is spent from it; the tree's other jobs paused for budget
 * (`pausedJobs`) get a line naming them. `left` names the budget on the path that bounds it (`budget.boundedBy`)
 * when that is not the one shown.
 */
export function describeBudget(v: BudgetView, added?: number, jobStatus?: JobStatus, endReason?: string | null): string {
  const b = v.budget;
  const bound = b.boundedBy;
  const lines = [
    ...(added !== undefined ? [`added ${formatMicros(Math.round(added * 1_000_000))} to ${b.jobId !== undefined ? `job ${b.jobId}'s sub-limit` : `job tree ${b.rootId}`}${afterOthers(v)}`] : []),
    `tree:      ${b.rootId}${b.rootId !== v.jobId ? ` (job ${v.jobId} is in it)` : ''}`,
    ...(b.jobId !== undefined ? [`sub-limit: job ${b.jobId} (it and its descendants${b.jobId !== v.jobId ? `, job ${v.jobId} among them` : ''}; never more than is left above it)`] : []),
    `budget:    ${formatMicros(b.limitMicros)}`,
    `spent:     ${formatMicros(b.spentMicros)}`,
    `reserved:  ${formatMicros(b.reservedMicros)}`,
    ...heldLine(v),
    `left:      ${formatMicros(b.remainingMicros)}${bound ? ` (bounded by ${bound.jobId === undefined ? `job tree ${b.rootId}` : `job ${bound.jobId}`}: ${formatMicros(bound.remainingMicros)} left of its own ${formatMicros(bound.limitMicros)})` : ''}${ownHoldOfLeft(v)}`,
  ];
  // Spent past the limit (an estimate charged at settle, or a limit lowered): say by how much, so a top-up can cover it.
  const over = b.spentMicros + b.reservedMicros - b.limitMicros;
  // Held room past what calls in flight left (the resume rule does not count them, store/budget-resume.ts): `left` shows 0, not how far over (fresh tester);
  // the job's own hold counts too (a holder's view leaves it out of heldMicros: it read as within its budget, fresh tester)
  const own = ownHeldOf(v);
  const overHeld = b.spentMicros + b.reservedMicros + (b.heldMicros ?? 0) + own - b.limitMicros;
  if (over > 0) lines.push(`over by:   ${formatMicros(over)} (a top-up of this much or less leaves nothing to spend)`);
  else if (overHeld > 0 && overHeld <= b.reservedMicros) {
    lines.push(`over by:   ${formatMicros(overHeld)} with the held room, until the calls in flight settle (reserved at their worst case, they settle lower as a rule; a resumed call they keep out waits for them)`);
  } else if (overHeld > 0) {
    // more than calls in flight explain: a need priced again after a price rise, or a call charged past its reservation (fresh tester)
    lines.push(`over by:   ${formatMicros(overHeld)} with the held room: resumed jobs${own > 0 ? ' (this one among them)' : ''} hold more than is left (a price went up, or calls cost more than they reserved, since they were resumed); their calls pause them again unless a top-up of at least ${formatMicros(overHeld)} comes first`);
  }
  if (v.resumed.length) lines.push(`resumed:   ${v.resumed.map((id) => `job ${id}`).join(', ')}`);
  // an ended root (or an ended job's own sub-limit): what is left can no longer be spent (tester finding: it read as money to spend)
  if (jobStatus !== undefined && TERMINAL_STATUSES.includes(jobStatus) && (v.jobId === b.rootId || b.jobId === v.jobId)) {
    lines.push(`ended:     job ${v.jobId} has ended (${jobStatus}): ${v.jobId === b.rootId ? 'its tree spends' : 'it and its descendants spend'} nothing more, and this budget takes no top-up`);
  } else if (v.rootStatus !== undefined) {
    // a child of a tree whose root ended: the root's view said so, the child's did not (tester finding)
    lines.push(`ended:     job tree ${b.rootId} has ended (its root job ${b.rootId} is ${v.rootStatus}): the tree spends nothing more, and its budget takes no top-up`);
  }
  // unless that process ends the job itself: a harness exiting 0 while being stopped ends it succeeded (server/paused-exit.ts; fresh tester: "resumed" for a job that then succeeded)
  if (jobStatus === 'paused' && endReason === RESUME_PENDING) {
    lines.push(`paused:    job ${v.jobId} resumes as soon as its stopped process has exited (no top-up needed), unless that process ends the job first: one that exits 0 while it is being stopped ends it succeeded, its work done, and nothing of the top-up is spent`);
  }
  // a tree whose root ended takes no top-up (the `ended:` line says so): no advice to top up (fresh tester: both showed)
  else if (jobStatus === 'paused' && v.rootStatus === undefined) lines.push(pausedLine(v));
  // the tree's other jobs waiting for budget (a root's view said nothing of them: tester finding)
  const others = v.pausedJobs;
  if (others.length === 1) lines.push(`others:    job ${others[0]} of this tree is paused for budget: flotilla budget ${others[0]} says what resumes it`);
  else if (others.length > 1) lines.push(`others:    jobs ${others.join(', ')} of this tree are paused for budget: flotilla budget ${others[0]} (and each of the others) says what resumes it`);
  return lines.join('\n');
}
