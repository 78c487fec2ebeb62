import { Command, Option } from 'commander';
import { listOption } from '../list-option.js';
import type { Labels } from '../../protocol/index.js';
import { ApiError } from '../../client/index.js';
import type { CliContext } from '../context.js';
import { runJob } from '../run-job.js';
import { CliError, addClientOptions, checkFolderOption, checkRoleLabels, clientFrom, intIn, makeFolderOption, parseBudget, parseIdArg, parseInputJson, parseLabels, parseRole, refuseEmptyLabels, refuseEmptyOptions, repoBaseDir, repoBaseOption, wantsJson, type ClientOptions } from '../options.js';

interface RunOptions extends ClientOptions {
  budget?: number;
  labels?: Labels;
  role?: string;
  priority?: number;
  detach?: boolean;
  local?: boolean;
  resume?: number;
  effort?: string;
  agents?: string[];
  repoBase?: string;
  parentToken?: string;
}

/**
 * `flotilla run AGENT [INPUT_JSON] [--budget USD] [--labels k=v,...] [--priority N] [--json]
 * [--detach] [--local] [--resume JOB]`: submits a job and follows it (follow.ts). With
 * `--local`, starts an in-process store, server and runner for the one job (local/run-local.ts).
 * `--effort TIER` picks the effort tier (model + effort level) over the agent's.
 * `--parent-token flj_...` (FLOTILLA_PARENT_TOKEN; issue 6) starts the job as a child of the job
 * holding that token, on FLOTILLA_URL unless --server is given. A token/URL/folder option given
 * empty (`--parent-token ""`, `FLOTILLA_PARENT_TOKEN=`) is a usage error (options.ts refuseEmpty), never "unset";
 * so are `--effort ""` and `--labels ""` (FLOTILLA_EFFORT=, FLOTILLA_RUN_LABELS=; options.ts refuseEmptyLabels).
 * `--resume JOB` continues that ended job's session in its workspace, on its runner (the job
 * fails with reason `resume_failed` if the harness cannot continue that very session).
 */
export function registerRun(program: Command, ctx: CliContext): void {
  const cmd = program
    .command('run')
    .description('run an agent: submit a job and follow it to the end (exit 0 only if it succeeded)')
    .argument('<agent>', 'agent name, e.g. test-fixer')
    .argument('[input_json]', 'the job input as a JSON object, e.g. \'{"repo":"examples/calc"}\'')
    .addOption(new Option('--budget <usd>', 'dollar budget for the job tree (default: the agent\'s)').env('FLOTILLA_BUDGET').argParser(parseBudget))
    .addOption(new Option('--labels <k=v,...>', 'labels a runner must have, added to the agent\'s runnerLabels (a key the agent names takes this value instead)').env('FLOTILLA_RUN_LABELS').argParser(parseLabels))
    .addOption(new Option('--role <role>', 'runner role this run asks for (runners started with --role ROLE), over the agent\'s').env('FLOTILLA_RUN_ROLE').argParser(parseRole))
    .addOption(new Option('--priority <n>', 'higher runs first (-100..100)').env('FLOTILLA_PRIORITY').argParser(intIn(-100, 100, 'priority')))
    .addOption(new Option('--detach', 'submit and return at once with the job id, leaving the job running (attached, Ctrl-C cancels it)').env('FLOTILLA_DETACH'))
    .addOption(new Option('--effort <tier>', 'effort tier for this run: max, high, medium or one the account defines (model + effort level)').env('FLOTILLA_EFFORT'))
    .addOption(
      new Option('--resume <job>', 'continue the session of this ended job: same runner, same workspace (input defaults to that job\'s)')
        .env('FLOTILLA_RESUME')
        .argParser(parseIdArg('resume')),
    )
    .addOption(
      new Option('--parent-token <flj_token>', 'from inside a job: start the run as a child of that job (its job token; the server defaults to FLOTILLA_URL)').env(
        'FLOTILLA_PARENT_TOKEN',
      ),
    )
    .addOption(new Option('--local', 'start a server and a runner in this process for this one job (no `flotilla up` needed)').env('FLOTILLA_LOCAL'))
    .addOption(listOption('--agents <dir>', 'with --local: an agent folder besides the shipped ones').env('FLOTILLA_AGENTS'))
    .addOption(repoBaseOption());
  addClientOptions(cmd);
  cmd.action(async (agent: string, inputJson: string | undefined, opts: RunOptions, self: Command) => {
    const json = wantsJson(self, opts);
    checkRoleLabels(opts.role, opts.labels);
    // A blank `--parent-token` (it made a new root job with the admin token) or `--effort` was
    // refused before this (options.ts refuseEmptyValues); `--labels ""` parses to no labels:
    refuseEmptyLabels(self, opts.labels, 'labels');
    if (opts.local && opts.parentToken !== undefined) {
      throw new CliError(`--parent-token cannot be used with --local (it starts its own server, where that job does not exist)${self.getOptionValueSource('parentToken') === 'env' ? ' (from FLOTILLA_PARENT_TOKEN)' : ''}`, 2);
    }
    const request = {
      agent,
      input: parseInputJson(inputJson),
      ...(opts.budget !== undefined ? { budgetUsd: opts.budget } : {}),
      ...(opts.labels && Object.keys(opts.labels).length > 0 ? { labels: opts.labels } : {}),
      ...(opts.priority !== undefined ? { priority: opts.priority } : {}),
      ...(opts.role !== undefined ? { role: opts.role } : {}),
      ...(opts.resume !== undefined ? { resumeJobId: opts.resume } : {}),
      ...(opts.effort !== undefined ? { effort: opts.effort } : {}),
    };
    if (opts.local && opts.resume !== undefined) throw new CliError('--resume cannot be used with --local (the session lives with a running server\'s runner)', 2);
    if (opts.local) {
      if (opts.detach) throw new CliError('--detach cannot be used with --local (the local server stops when the job ends)', 2);
      if (self.getOptionValueSource('server') === 'cli') throw new CliError('--server cannot be used with --local (it starts its own server)', 2);
      refuseEmptyOptions(self, ['data']);
      await checkFolderOption('--data', opts.data, 'FLOTILLA_DATA');
      await makeFolderOption('--data', opts.data, 0o700);
      const agentsDirs = opts.agents ?? [];
      const repoBase = await repoBaseDir(opts.repoBase);
      ctx.setExit(await ctx.runLocal({ request, data: opts.data, agentsDirs, json, io: ctx.io, ...(repoBase !== undefined ? { repoBaseDir: repoBase } : {}) }));
      return;
    }
    // a server reads its agent folders when it starts: the flag would be ignored without a word (tester finding)
    if (self.getOptionValueSource('agents') === 'cli') throw new CliError('--agents works with --local only: a server reads its agent folders when it starts (flotilla up --agents DIR)', 2);
    if (opts.parentToken !== undefined) {
      // issue 6: a child of the job holding this token (same tree, budget and cancel), on
      // --server, else FLOTILLA_URL (set by the runner), else FLOTILLA_SERVER; --token is not used.
      let server = opts.server;
      if (self.getOptionValueSource('server') === 'cli') refuseEmptyOptions(self, ['server']);
      else if (process.env.FLOTILLA_URL !== undefined) {
        if (process.env.FLOTILLA_URL.trim() === '') throw new CliError('FLOTILLA_URL (the server of --parent-token) is set to "": give the control plane URL, or unset FLOTILLA_URL to use --server / FLOTILLA_SERVER', 2);
        server = process.env.FLOTILLA_URL;
      } else refuseEmptyOptions(self, ['server']);
      const client = await clientFrom({ ...opts, server, token: opts.parentToken });
      try {
        ctx.setExit(await runJob(client, request, { json, detach: opts.detach, io: ctx.io }));
      } catch (err) {
        if (err instanceof ApiError && err.status === 401) {
          // still the API's error (--json keeps its code and status), with what was refused
          throw new ApiError(err.status, err.code, `${err.message} — the job token of --parent-token / FLOTILLA_PARENT_TOKEN was refused (unknown, or its job has ended)`, err.field);
        }
        throw err;
      }
      return;
    }
    refuseEmptyOptions(self, ['server', 'token']);
    const client = await clientFrom(opts);
    ctx.setExit(await runJob(client, request, { json, detach: opts.detach, io: ctx.io }));
  });
}
