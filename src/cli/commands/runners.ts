import { Command, InvalidArgumentError, Option } from 'commander';
import { RunnerStatus, UpdateVersion, type Labels, type Runner, type UpdateRunnerResponse } from '../../protocol/index.js';
import { ApiError } from '../../client/index.js';
import { holdText, keptText, resolveRunner, slotsText } from './fleet-util.js';
import type { CliContext } from '../context.js';
import { formatTable } from '../format.js';
import { shellLine } from '../../protocol/shell-quote.js';
import { addClientOptions, checkRoleLabels, CliError, clientFrom, intIn, parseIdArg, parseLabels, parseRole, refuseEmptyLabels, wantsJson, type ClientOptions } from '../options.js';

/** Formats labels as `k=v,k2=v2` (the form `--labels` takes). */
export function labelText(labels: Labels): string {
  return Object.entries(labels)
    .map(([k, v]) => `${k}=${v}`)
    .join(',');
}

/**
 * `flotilla runners [list] [--label k=v] [--status S] [--held] [--role R]` (S may be `revoked`;
 * a runner has one status, and `--status` matches the one shown: an offline runner on hold is
 * `offline`; `--held` keeps the runners with a hold in force, whatever their status),
 * `runners show RUNNER [--activity N]` (the runner, its recent jobs, and its N latest activity
 * lines, default 20; `--json` → the API's RunnerDetail plus `activity`: the entries of
 * `GET /api/runners/{id}/activity`, newest first),
 * `runners revoke RUNNER`, `runners update RUNNER|--all [--to VERSION]` (admin: the runner takes
 * no new job, finishes its running ones, runs its update command and restarts on the new code;
 * `--json` → the API's UpdateRunnerResponse, with `--all` `{ results: [...] }`, one per runner
 * that is connected: the response, `{ runnerId, name, error: { code, message } }` (exit 1), or
 * `{ runnerId, name, skipped: {...} }` for the runner inside `flotilla up`, which cannot update
 * itself (409 cannot_update; not a failure of --all)), and
 * registration tokens (admin). (`--to`, not `--version`: the root command's `--version` is
 * recognised after subcommands too.) Registration tokens:
 * - `runners token create [--labels k=v,...] [--ttl SECONDS]` (env FLOTILLA_RUNNER_TOKEN_LABELS,
 *   FLOTILLA_RUNNER_TOKEN_TTL: not FLOTILLA_LABELS, which is the runner's own labels): prints the token once, and its id;
 * - `runners token list [--all]` (default): id, status, labels, created, expires, used, revoked;
 *   only the live ones unless `--all` (env FLOTILLA_RUNNER_TOKENS_ALL); `--json` → the API's
 *   RunnerTokenList; never a token or its hash;
 * - `runners token revoke ID`: registration refuses the token from now on; again is fine; a
 *   used token stays used (revoke its runner); `--json` → `{ token: RunnerTokenInfo }`.
 * Exit 0 on success; 1 on an API error (not an admin, unknown id: the message names it); 2 on
 * a bad argument.
 */
export function registerRunners(program: Command, ctx: CliContext): void {
  const runners = program.command('runners').description('list runners and create runner registration tokens');
  const out = (s: string) => ctx.io.stdout.write(s + '\n');

  const list = runners
    .command('list', { isDefault: true })
    .description('list registered runners: status, labels, slots used, current jobs, hold; and the queue')
    .addOption(new Option('--label <k=v,...>', 'only runners with all these labels').env('FLOTILLA_RUNNER_LABELS').argParser(parseLabels))
    .addOption(new Option('--status <status>', STATUS_HELP).choices(RunnerStatus.options).env('FLOTILLA_RUNNER_STATUS'))
    .addOption(new Option('--held', 'only runners with a hold in force (on_hold or provisioning), whatever their status: an offline runner keeps its hold').env('FLOTILLA_RUNNER_HELD'))
    .addOption(new Option('--role <role>', 'only runners with label role=ROLE').env('FLOTILLA_RUNNER_ROLE').argParser(parseRole));
  addClientOptions(list).action(async (opts: ClientOptions & { label?: Labels; status?: RunnerStatus; held?: boolean; role?: string }, self: Command) => {
    refuseEmptyLabels(self, opts.label, 'label');
    checkRoleLabels(opts.role, opts.label, '--label');
    const client = await clientFrom(opts);
    const fleet = await client.listFleet({ ...(opts.label ? { labels: opts.label } : {}), ...(opts.status ? { status: opts.status } : {}), ...(opts.role ? { role: opts.role } : {}) });
    if (opts.held) fleet.runners = fleet.runners.filter((r) => Boolean(r.hold));
    if (wantsJson(self, opts)) return void out(JSON.stringify(fleet));
    const all = fleet.runners;
    const filtered = opts.label || opts.status || opts.held || opts.role;
    if (all.length === 0) out(filtered ? 'no runners match' : 'no runners (start one with: flotilla runner --server URL --token TOKEN)');
    else out(formatTable(['id', 'name', 'status', 'labels', 'slots', 'jobs', 'hold', 'last heartbeat'], all.map(runnerRow)));
    if (fleet.queued !== undefined) out(`queue: ${fleet.queued} job${fleet.queued === 1 ? '' : 's'} waiting`);
  });

  const show = runners
    .command('show')
    .description('one runner: status, labels, slots, hold, recent jobs and recent activity (connects, holds, job starts and ends)')
    .argument('<runner>', 'runner id or name')
    .addOption(new Option('--activity <n>', 'activity lines to show, newest first, 1 to 200').env('FLOTILLA_RUNNER_ACTIVITY').argParser(intIn(1, 200, 'activity')).default(SHOW_ACTIVITY));
  addClientOptions(show).action(async (runner: string, opts: ClientOptions & { activity: number }, self: Command) => {
    const client = await clientFrom(opts);
    const id = await resolveRunner(client, runner);
    const [d, activity] = await Promise.all([client.getRunner(id), client.getRunnerActivity(id, { limit: opts.activity })]);
    if (wantsJson(self, opts)) return void out(JSON.stringify({ ...d, activity: activity.entries }));
    const r = d.runner;
    const lines = [
      `runner:    ${r.name} (${r.id})`,
      `status:    ${r.status}`,
      `labels:    ${labelText(r.labels)}`,
      `slots:     ${slotsText(r)}${r.runningJobs.length ? ` (jobs ${r.runningJobs.join(', ')})` : ''}${keptText(r)}, browser slots ${r.browserSlots ?? 1}`,
      ...(r.boundLabels && Object.keys(r.boundLabels).length ? [`bound:     ${labelText(r.boundLabels)} (from its registration token)`] : []),
      ...(r.hold ? [`hold:      ${holdText(r)}`] : []),
      ...(r.revokedAt ? [`revoked:   ${r.revokedAt}`] : []),
      `version:   ${r.version ?? ''}`,
      `heartbeat: ${r.lastHeartbeatAt ?? 'never'}`,
    ];
    out(lines.join('\n'));
    if (d.recentJobs.length) {
      out('');
      // One row per attempt that ran here: `outcome` is how it went on this runner (`lost`: retried
      // elsewhere), `job` the job's status now.
      out(formatTable(['job', 'agent', 'attempt', 'outcome', 'job now', 'assigned', 'ended'], d.recentJobs.map((j) => [String(j.id), j.agent, String(j.attempt), j.outcome, j.status, j.assignedAt ?? '', j.endedAt ?? ''])));
    }
    if (activity.entries.length) {
      out('');
      out('activity (newest first):');
      out(formatTable(['at', 'kind', 'what'], activity.entries.map((e) => [e.at, e.kind, oneLine(e.text)])));
    }
  });

  const revoke = runners
    .command('revoke')
    .description('revoke a runner (admin): its connection and job tokens end; it cannot reconnect')
    .argument('<runner>', 'runner id or name');
  addClientOptions(revoke).action(async (runner: string, opts: ClientOptions, self: Command) => {
    const client = await clientFrom(opts);
    const r = await client.revokeRunner(await resolveRunner(client, runner));
    if (wantsJson(self, opts)) return void out(JSON.stringify({ runner: r }));
    out(`runner ${r.name} (${r.id}) revoked at ${r.revokedAt ?? '?'}`);
  });

  const update = runners
    .command('update')
    .description("update a runner (admin): it takes no new job, lets its running jobs finish, runs its update command (--update-command of `flotilla runner`) and restarts on the new code; status updating meanwhile")
    .argument('[runner]', 'runner id or name')
    .addOption(new Option('--to <version>', "version to install, e.g. 0.2.0 or latest (default: the server's own)").env('FLOTILLA_RUNNER_UPDATE_VERSION').argParser(parseUpdateVersion))
    .addOption(new Option('--all', 'every connected runner (online, busy or held)').env('FLOTILLA_RUNNER_UPDATE_ALL'));
  addClientOptions(update).action(async (runner: string | undefined, opts: ClientOptions & { to?: string; all?: boolean }, self: Command) => {
    if ((runner === undefined) === (opts.all !== true)) throw new CliError('runners update: give one RUNNER (id or name) or --all', 2);
    const client = await clientFrom(opts);
    const req = opts.to !== undefined ? { version: opts.to } : {};
    const say = (r: UpdateRunnerResponse) =>
      r.started
        ? `runner ${r.runner.name} (${r.runner.id}) updating to ${r.version}: no new jobs; ${r.runner.runningJobs.length ? `after its ${r.runner.runningJobs.length} running job${r.runner.runningJobs.length === 1 ? '' : 's'} finish, ` : ''}it runs its update command and restarts`
        : `runner ${r.runner.name} (${r.runner.id}) is already updating (asked again for ${r.version}: nothing sent)`;
    if (runner !== undefined) {
      const r = await client.updateRunner(await resolveRunner(client, runner), req);
      if (wantsJson(self, opts)) return void out(JSON.stringify(r));
      return void out(say(r));
    }
    const connected = (await client.listRunners()).filter((r) => r.status !== 'offline' && r.status !== 'revoked');
    // A runner that cannot update itself (the one inside `flotilla up`: 409 cannot_update) is
    // skipped, not a failure of --all: nothing could make it update this way.
    type Outcome = UpdateRunnerResponse | { runnerId: number; name: string; error: { code: string; message: string } } | { runnerId: number; name: string; skipped: { code: string; message: string } };
    const results: Outcome[] = [];
    for (const r of connected) {
      try {
        results.push(await client.updateRunner(r.id, req));
      } catch (err) {
        if (!(err instanceof ApiError)) throw err;
        const why = { code: err.code, message: err.message };
        results.push(err.code === 'cannot_update' ? { runnerId: r.id, name: r.name, skipped: why } : { runnerId: r.id, name: r.name, error: why });
      }
    }
    const failed = results.filter((r) => 'error' in r).length;
    if (failed) ctx.setExit(1);
    if (wantsJson(self, opts)) return void out(JSON.stringify({ results }));
    if (results.length === 0) return void out('no connected runners to update');
    for (const r of results) out('error' in r ? `runner ${r.name} (${r.runnerId}): not updated: ${r.error.message}` : 'skipped' in r ? `runner ${r.name} (${r.runnerId}): skipped: ${r.skipped.message}` : say(r));
  });

  const set = runners
    .command('set')
    .description("set a runner's capacity (admin): parallel jobs and browser slots; they win over the runner's own --capacity/--browser-slots")
    .argument('<runner>', 'runner id or name')
    .addOption(new Option('--capacity <n|auto>', 'parallel jobs 1-4 (auto: the runner\'s own setting)').env('FLOTILLA_RUNNER_CAPACITY').argParser(slotsOrAuto('capacity')))
    .addOption(new Option('--browser-slots <n|auto>', 'browser slots 1-4, at most the capacity (auto: the runner\'s own)').env('FLOTILLA_RUNNER_BROWSER_SLOTS').argParser(slotsOrAuto('browser-slots')));
  addClientOptions(set).action(async (runner: string, opts: ClientOptions & { capacity?: number; browserSlots?: number }, self: Command) => {
    if (opts.capacity === undefined && opts.browserSlots === undefined) throw new CliError('runners set: nothing to set: give --capacity <1-4|auto> (or FLOTILLA_RUNNER_CAPACITY) and/or --browser-slots <1-4|auto> (or FLOTILLA_RUNNER_BROWSER_SLOTS)', 2); // not InvalidArgumentError: thrown from an action commander prints nothing
    // Both given as numbers: a combination the server refuses is a usage error (exit 2), before any request.
    if (opts.capacity && opts.browserSlots && opts.browserSlots > opts.capacity) {
      throw new CliError(tooManySlots(opts.browserSlots, opts.capacity), 2);
    }
    const client = await clientFrom(opts);
    const id = await resolveRunner(client, runner);
    // Only the capacity given: the server lowers browser slots above it (say so, below).
    const before = opts.browserSlots === undefined ? (await client.getRunner(id)).runner : undefined;
    let r: Runner;
    try {
      r = await client.setRunnerCapacity(id, {
        ...(opts.capacity !== undefined ? { capacity: opts.capacity || null } : {}),
        ...(opts.browserSlots !== undefined ? { browserSlots: opts.browserSlots || null } : {}),
      });
    } catch (err) {
      throw cliWordsForCapacity(err);
    }
    if (wantsJson(self, opts)) return void out(JSON.stringify({ runner: r }));
    const was = before?.browserSlots ?? 1;
    const lowered = before && (r.browserSlots ?? 1) < was ? ` (lowered from ${was} to fit the capacity; change with --browser-slots)` : '';
    out(`runner ${r.name} (${r.id}): capacity ${r.capacity}, browser slots ${r.browserSlots ?? 1}${lowered}`);
  });

  const token = runners.command('token').description('runner registration tokens (admin): create, list, revoke');
  const create = token
    .command('create')
    .description('create a single-use token a new runner registers with (admin)')
    .addOption(new Option('--labels <k=v,...>', 'labels the runner gets (binding: the runner cannot change them, only add others)').env('FLOTILLA_RUNNER_TOKEN_LABELS').argParser(parseLabels))
    .addOption(new Option('--ttl <seconds>', 'how long the token stays valid, 1 to 2592000 (30 days)').env('FLOTILLA_RUNNER_TOKEN_TTL').argParser(intIn(1, 30 * 24 * 3600, 'ttl')).default(3600));
  addClientOptions(create).action(async (opts: ClientOptions & { labels?: Labels; ttl: number }, self: Command) => {
    // `--labels ""` (a script's $LABELS that expanded to nothing) made a token with no binding labels.
    refuseEmptyLabels(self, opts.labels, 'labels');
    const client = await clientFrom(opts);
    const t = await client.createRunnerToken({ labels: opts.labels ?? {}, expiresInSeconds: opts.ttl });
    if (wantsJson(self, opts)) return void out(JSON.stringify(t));
    // A line to paste into a shell: every value quoted (a label value may hold spaces).
    const line = shellLine(['flotilla', 'runner', '--server', client.url, '--token', t.token, ...(opts.labels && Object.keys(opts.labels).length > 0 ? ['--labels', labelText(opts.labels)] : [])]);
    out(t.token);
    ctx.io.stderr.write(
      `single use, valid until ${typeof t.expiresAt === 'number' ? new Date(t.expiresAt).toISOString() : t.expiresAt}; on the new machine run:\n` +
        `  ${line}\n` +
        (t.id !== undefined ? `revoke it unused: flotilla runners token revoke ${t.id}\n` : ''),
    );
  });

  const tokenList = token
    .command('list', { isDefault: true })
    .description('list runner registration tokens (admin): id, status, labels, times; never a token itself. Only live ones (unused, not revoked, not expired) unless --all')
    .addOption(new Option('--all', 'also used, expired and revoked tokens').env('FLOTILLA_RUNNER_TOKENS_ALL'));
  addClientOptions(tokenList).action(async (opts: ClientOptions & { all?: boolean }, self: Command) => {
    const rows = await (await clientFrom(opts)).listRunnerTokens({ all: opts.all === true });
    if (wantsJson(self, opts)) return void out(JSON.stringify({ tokens: rows }));
    if (rows.length === 0) return void out(opts.all ? 'no runner registration tokens' : 'no live runner registration tokens (--all also lists used, expired and revoked ones)');
    out(formatTable(['id', 'status', 'labels', 'created', 'expires', 'used', 'revoked'], rows.map((t) => [String(t.id), t.status, labelText(t.labels), t.createdAt, t.expiresAt, t.usedAt ?? '', t.revokedAt ?? ''])));
  });

  const tokenRevoke = token
    .command('revoke')
    .description('revoke a runner registration token (admin): no runner can register with it any more')
    .argument('<id>', 'token id (see flotilla runners token list; runners token create prints it)', parseIdArg('token id'));
  addClientOptions(tokenRevoke).action(async (id: number, opts: ClientOptions, self: Command) => {
    const t = await (await clientFrom(opts)).revokeRunnerToken(id);
    if (wantsJson(self, opts)) return void out(JSON.stringify({ token: t }));
    if (t.status === 'used') out(`runner registration token ${t.id} was already used at ${t.usedAt ?? '?'}: it registers no other runner; to cut off the runner it registered: flotilla runners revoke RUNNER`);
    else out(`runner registration token ${t.id} revoked at ${t.revokedAt ?? '?'}`);
  });
}

/** `--to` of `runners update`: a protocol {@link UpdateVersion} (npm version or dist-tag). */
function parseUpdateVersion(v: string): string {
  const r = UpdateVersion.safeParse(v);
  if (!r.success) throw new InvalidArgumentError(r.error.issues[0]?.message ?? 'not a version');
  return v;
}

/**
 * `--capacity`/`--browser-slots` value: an integer 1–4, or `auto` → 0, sent as null (clear the
 * owner setting). Not null itself: commander turns a parser's null into ''.
 */
function slotsOrAuto(flag: string): (v: string) => number {
  return (v: string) => {
    if (v === 'auto') return 0;
    if (!/^[1-4]$/.test(v)) throw new InvalidArgumentError(`--${flag} must be 1, 2, 3, 4 or auto, got ${JSON.stringify(v)}`);
    return Number(v);
  };
}

/**
 * The API's refusal of browser slots over capacity, in the CLI's words (`--browser-slots`,
 * `--capacity`) with what to pass instead; any other error unchanged.
 */
function cliWordsForCapacity(err: unknown): unknown {
  if (!(err instanceof ApiError) || err.field !== 'browserSlots') return err;
  const m = /browserSlots \((\d+)\) must not exceed capacity \((\d+)\)/.exec(err.message);
  if (!m) return err;
  return new CliError(tooManySlots(Number(m[1]), Number(m[2])));
}

/** The words for browser slots above the capacity (exit 2 when both were given, 1 when the server's setting refused them). */
function tooManySlots(slots: number, capacity: number): string {
  return `runners set: --browser-slots ${slots} is more than the capacity (${capacity} parallel job${capacity === 1 ? '' : 's'}): pass --browser-slots ${capacity} or less, or a larger --capacity`;
}

/**
 * `runners --status`: a runner has one status, the one the list shows (server/views.ts
 * runnerStatus), and the filter matches that.
 */
const STATUS_HELP =
  'only runners whose status (the one shown) is this. A runner has one status, the first that applies: revoked; updating; offline (not connected, or silent past the heartbeat timeout); provisioning or on_hold (a hold in force); busy (jobs hold slots); online. So an offline runner on hold is offline, its hold still in the hold column: --held lists held runners whatever their status';

/** Activity lines `runners show` prints by default (the API's default is 50). */
export const SHOW_ACTIVITY = 20;

/** `text` on one line: runs of whitespace (a job error's newlines) become one space, control characters go. */
function oneLine(text: string): string {
  // eslint-disable-next-line no-control-regex
  return text.replace(/\s+/g, ' ').replace(/[\u0000-\u001f\u007f]/g, '').trim();
}

function runnerRow(r: Runner): string[] {
  return [String(r.id), r.name, r.status, labelText(r.labels), slotsText(r), r.runningJobs.join(','), holdText(r), r.lastHeartbeatAt ?? ''];
}
