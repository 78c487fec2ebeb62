import { Command, Option } from 'commander';
import { listOption } from '../list-option.js';
import { formatMicros } from '../../core/money.js';
import { MAX_COALESCE_SECONDS, TaskStatus, type Task, type TaskDetail } from '../../protocol/index.js';
import type { CliContext } from '../context.js';
import { cut, formatTable } from '../format.js';
import { addClientOptions, budgetArg, CliError, clientFrom, intIn, parseBudget, parseIdArg, parseInputJson, wantsJson, type ClientOptions } from '../options.js';

const parseTaskId = parseIdArg('task id');

/** The current turn's job as a cell: `12`, `12 (paused)` when its job is not plainly running, `12 (2 paused)` when jobs of its tree wait for budget. */
function turnCell(t: Task): string {
  if (t.currentJobId === null) return '-';
  if (t.turnJobStatus !== 'paused' && t.turnPausedJobs > 0) return `${t.currentJobId} (${t.turnPausedJobs} paused)`;
  return t.turnJobStatus === null || t.turnJobStatus === 'running' ? String(t.currentJobId) : `${t.currentJobId} (${t.turnJobStatus})`;
}

function taskLine(t: Task): string[] {
  const pending = t.queuedPrompts + t.pendingEvents;
  const spent = formatMicros(t.spentMicros) + (t.budgetMicros === null ? '' : ` of ${formatMicros(t.budgetMicros)}`);
  return [String(t.id), t.agent, t.status, cut(t.title || t.keys[0] || '', 50), String(t.turns), turnCell(t), pending ? String(pending) : '-', spent];
}

/** The task's budget as one line: budget, spent, reserved, left; or that it has none. µ$ shown as exact dollars. */
function budgetLine(t: Task): string {
  const spent = `spent ${formatMicros(t.spentMicros)}${t.reservedMicros > 0 ? `, ${formatMicros(t.reservedMicros)} reserved for calls in flight` : ''}`;
  if (t.budgetMicros === null) return `none of its own (each turn gets its agent's default budget); ${spent}`;
  return `${formatMicros(t.budgetMicros)} for all its turns; ${spent}; ${formatMicros(Math.max(0, t.budgetMicros - t.spentMicros - t.reservedMicros))} left`;
}

/**
 * When the current turn's job, or jobs it started, are paused for budget: what tops them up (the
 * task's budget when it has one, else the turn's tree), else null.
 */
function pausedLine(t: Task): string | null {
  if (t.currentJobId === null || (t.turnJobStatus !== 'paused' && t.turnPausedJobs === 0)) return null;
  const how = t.budgetMicros !== null ? `flotilla tasks budget ${t.id} --add <USD>` : `flotilla budget ${t.currentJobId} --add <USD>`;
  if (t.turnJobStatus === 'paused') return `turn job ${t.currentJobId} is paused for budget; a top-up resumes it: ${how} (flotilla budget ${t.currentJobId} shows what it needs)`;
  const n = t.turnPausedJobs;
  return `${n} job${n === 1 ? '' : 's'} that turn job ${t.currentJobId} started ${n === 1 ? 'is' : 'are'} paused for budget; a top-up resumes ${n === 1 ? 'it' : 'them'}: ${how} (flotilla budget ${t.currentJobId} names them)`;
}

/** A task as text: fields, keys, then its newest events. */
export function describeTask(d: TaskDetail): string {
  const t = d.task;
  // as `flotilla runners` and `costs` name a runner: `r2 (#3)`
  const runner = t.runnerId === null ? '?' : d.runnerName ? `${d.runnerName} (#${t.runnerId})` : `#${t.runnerId}`;
  const lines = [
    `task ${t.id} (${t.agent}): ${t.status}${t.title ? ` — ${t.title}` : ''}`,
    `  keys:       ${t.keys.length ? t.keys.join(', ') : '-'}`,
    `  turns:      ${t.turns}${t.currentJobId !== null ? ` (job ${t.currentJobId} ${t.turnJobStatus ?? 'running'})` : ''}`,
    `  budget:     ${budgetLine(t)}`,
    `  workspace:  ${t.workspaceJobId !== null ? `job ${t.workspaceJobId} on runner ${runner}, session ${t.sessionId ?? '?'}` : 'none yet'}`,
    `  pending:    ${t.queuedPrompts} prompt(s), ${t.pendingEvents} event(s)${t.trailingWakeAt ? `; trailing wake at ${t.trailingWakeAt}` : ''}${t.status === 'completed' && t.queuedPrompts + t.pendingEvents > 0 ? ' (the task is completed: they go to its next turn if it is reopened)' : ''}`,
    `  coalescing: ${t.coalesceSeconds} s`,
  ];
  if (t.slotHeldUntil && Date.parse(t.slotHeldUntil) > Date.now()) lines.push(`  slot:       runner ${runner} kept for the next turn until ${t.slotHeldUntil}`);
  const paused = pausedLine(t);
  if (paused) lines.push(`  paused:     ${paused}`);
  if (t.error) lines.push(`  error:      ${t.error}`);
  if (d.events.length) {
    lines.push('events (newest first):');
    for (const e of d.events.slice(0, 20)) lines.push(`  ${e.occurredAt} ${e.kind}${e.actor ? ` ${e.actor}` : ''}${e.turn ? ` [turn ${e.turn}]` : t.status === 'completed' ? ' [undelivered]' : ' [pending]'}: ${cut(e.summary.replace(/\s+/g, ' '), 100)}`);
  }
  return lines.join('\n');
}

/**
 * `flotilla tasks [list]`, `tasks create AGENT`, `tasks show|send|suspend|resume|stop|complete ID`
 * (issue 7), `tasks budget ID --add|--set USD` (issue 3, budgets per task). Every option also
 * reads a `FLOTILLA_TASK_*` environment variable.
 */
export function registerTasks(program: Command, ctx: CliContext): void {
  const out = (s: string) => ctx.io.stdout.write(s + '\n');
  const tasks = program.command('tasks').description('durable tasks woken by events and prompts: list, create, show, send, budget, suspend, resume, stop, complete');

  const list = tasks
    .command('list', { isDefault: true })
    .description('list tasks, newest first')
    .addOption(new Option('--status <status>', 'only tasks in this status').choices(TaskStatus.options).env('FLOTILLA_TASK_STATUS'))
    .addOption(new Option('--limit <n>', 'at most this many (1-200)').argParser(intIn(1, 200, 'limit')).default(50).env('FLOTILLA_TASK_LIMIT'));
  addClientOptions(list).action(async (opts: ClientOptions & { status?: TaskStatus; limit: number }, self: Command) => {
    const rows = await (await clientFrom(opts)).listTasks({ ...(opts.status ? { status: opts.status } : {}), limit: opts.limit });
    if (wantsJson(self, opts)) return void out(JSON.stringify({ tasks: rows }));
    if (rows.length === 0) return void out('no tasks');
    out(formatTable(['id', 'agent', 'status', 'title', 'turns', 'job', 'pending', 'spent'], rows.map(taskLine)));
  });

  const create = tasks
    .command('create')
    .description('create a task of an agent owning resource keys; with --prompt it starts at once')
    .argument('<agent>', 'agent name')
    .addOption(new Option('--title <text>', 'what the task is about').env('FLOTILLA_TASK_TITLE'))
    .addOption(listOption('--key <key>', 'a resource key it owns, e.g. github.com/acme/api/issues/42; or several, comma-separated').env('FLOTILLA_TASK_KEYS'))
    .addOption(new Option('--prompt <text>', 'first prompt').env('FLOTILLA_TASK_PROMPT'))
    .addOption(new Option('--input <json>', 'job input given to every turn (JSON object)').env('FLOTILLA_TASK_INPUT'))
    .addOption(new Option('--coalesce <seconds>', `coalescing window (0-${MAX_COALESCE_SECONDS}); default 180`).argParser(intIn(0, MAX_COALESCE_SECONDS, 'coalesce')).env('FLOTILLA_TASK_COALESCE'))
    .addOption(new Option('--budget <usd>', "budget of all its turns together, USD; default: the agent's limits.taskBudgetUsd, else none (each turn its agent's default)").argParser(parseBudget).env('FLOTILLA_TASK_BUDGET'));
  addClientOptions(create).action(
    async (agent: string, opts: ClientOptions & { title?: string; key?: string[]; prompt?: string; input?: string; coalesce?: number; budget?: number }, self: Command) => {
      // a blank --prompt or --key is refused before this (main.ts: options.ts refuseEmptyValues)
      const given = (opts.key ?? []).join(',');
      const keys = given === '' ? [] : given.split(',').map((k) => k.trim());
      // `--key ","` or `--key "k8,"`: an empty key is a mistake, never dropped without a word (tester finding)
      if (keys.some((k) => k === '')) throw new CliError(`--key (FLOTILLA_TASK_KEYS) has an empty key in ${JSON.stringify(given)}: give each key, comma-separated or one per --key`, 2);
      const t = await (await clientFrom(opts)).createTask({
        agent,
        keys,
        ...(opts.title ? { title: opts.title } : {}),
        ...(opts.prompt !== undefined ? { prompt: opts.prompt } : {}),
        ...(opts.input ? { input: parseInputJson(opts.input, '--input') } : {}),
        ...(opts.coalesce !== undefined ? { coalesceSeconds: opts.coalesce } : {}),
        ...(opts.budget !== undefined ? { budgetUsd: opts.budget } : {}),
      });
      if (wantsJson(self, opts)) return void out(JSON.stringify({ task: t }));
      out(`task ${t.id} created (${t.agent}): ${t.status}${t.currentJobId ? `, turn 1 is job ${t.currentJobId}` : ''}`);
    },
  );

  const show = tasks.command('show').description('show a task, its workspace and its newest events').argument('<id>', 'task id', parseTaskId);
  addClientOptions(show).action(async (id: number, opts: ClientOptions, self: Command) => {
    const d = await (await clientFrom(opts)).getTask(id);
    if (wantsJson(self, opts)) return void out(JSON.stringify(d));
    out(describeTask(d));
  });

  const send = tasks
    .command('send')
    .description("queue a prompt for the task's next turn (it starts now when the task is idle)")
    .argument('<id>', 'task id', parseTaskId)
    .argument('<prompt>', 'the prompt');
  addClientOptions(send).action(async (id: number, prompt: string, opts: ClientOptions, self: Command) => {
    const t = await (await clientFrom(opts)).sendTaskPrompt(id, prompt);
    if (wantsJson(self, opts)) return void out(JSON.stringify({ task: t }));
    if (t.status === 'idle' && t.currentJobId === null && t.error) throw new Error(`task ${t.id}: prompt queued, but its turn cannot start: ${t.error}`);
    const paused = pausedLine(t);
    if (paused) return void out(`task ${t.id}: prompt queued for the next turn, ${t.queuedPrompts} waiting; ${paused}`);
    const why =
      t.status === 'suspended' ? ` — the task is suspended: it runs after \`flotilla tasks resume ${t.id}\`` : t.status === 'workspace_lost' ? ` — the task's workspace is lost${t.error ? ` (${t.error})` : ''}: \`flotilla tasks resume ${t.id}\` starts it afresh` : '';
    out(`task ${t.id}: prompt queued; ${t.status}${t.currentJobId ? ` (job ${t.currentJobId})` : ''}, ${t.queuedPrompts} waiting${why}`);
  });

  const budget = tasks
    .command('budget')
    .description("add to a task's budget (its running turn gets it too; a turn paused for budget resumes) or set it between turns: one of --add and --set; a budget is at most $100,000")
    .argument('<id>', 'task id', parseTaskId)
    .addOption(new Option('--add <usd>', 'dollars to add to the budget').argParser(budgetArg('--add')).env('FLOTILLA_TASK_BUDGET_ADD'))
    .addOption(new Option('--set <usd>', 'the budget of all its turns together, USD (between turns only)').argParser(budgetArg('--set')).env('FLOTILLA_TASK_BUDGET_SET'));
  addClientOptions(budget).action(async (id: number, opts: ClientOptions & { add?: number; set?: number }, self: Command) => {
    // a usage error (exit 2), as a bad value is: the two come from flags or FLOTILLA_TASK_BUDGET_ADD / _SET
    if ((opts.add === undefined) === (opts.set === undefined)) throw new CliError('give exactly one of --add <usd> (add to the budget; or FLOTILLA_TASK_BUDGET_ADD) and --set <usd> (set it; or FLOTILLA_TASK_BUDGET_SET)', 2);
    const t = await (await clientFrom(opts)).setTaskBudget(id, opts.add !== undefined ? { addUsd: opts.add } : { budgetUsd: opts.set! });
    const { resumed, ...task } = t;
    if (wantsJson(self, opts)) return void out(JSON.stringify({ task, resumed }));
    out(`task ${t.id}: budget ${budgetLine(t)}`);
    if (resumed.length > 0) out(`resumed:   ${resumed.map((j) => `job ${j}`).join(', ')}`);
    const paused = pausedLine(t);
    if (paused) out(`still paused: ${paused}`);
    else if (t.currentJobId !== null) out(`turn job ${t.currentJobId}: ${t.turnJobStatus ?? 'running'}`);
  });

  const actions: Array<[string, string, 'suspendTask' | 'resumeTask' | 'stopTask' | 'completeTask']> = [
    ['suspend', 'no more wakes until resumed (workspace, session and queue are kept; a running turn finishes)', 'suspendTask'],
    ['resume', 'resume a suspended task (a task whose workspace is gone starts afresh; a completed one reopens)', 'resumeTask'],
    ['stop', "interrupt the task's current turn only (its job is cancelled)", 'stopTask'],
    ['complete', 'complete the task: keys released, its running job cancelled', 'completeTask'],
  ];
  for (const [name, description, method] of actions) {
    const cmd = tasks.command(name).description(description).argument('<id>', 'task id', parseTaskId);
    addClientOptions(cmd).action(async (id: number, opts: ClientOptions, self: Command) => {
      const t = await (await clientFrom(opts))[method](id);
      if (wantsJson(self, opts)) return void out(JSON.stringify({ task: t }));
      // After stop the task still reads running until the runner reports its job ended.
      if (name === 'stop' && t.currentJobId) return void out(`task ${t.id}: stopping its turn (job ${t.currentJobId} is being cancelled)`);
      out(`task ${t.id}: ${t.status}${t.currentJobId ? ` (job ${t.currentJobId})` : ''}`);
    });
  }
}
