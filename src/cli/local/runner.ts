import { join, resolve } from 'node:path';
import { Command, Option } from 'commander';
import { randomUUID } from 'node:crypto';
import { RunnerInstance, type Labels } from '../../protocol/index.js';
import type { CliContext } from '../context.js';
import { onInterrupt } from '../io.js';
import { revokedRunnerMessage } from './revoked.js';
import { DEFAULT_UPDATE_COMMAND } from '../../runner/self-update.js';
import { CliError, DEFAULT_SERVER, checkFolderOption, checkRoleLabels, defaultDataDir, refuseEmptyOptions, intIn, makeFolderOption, parseLabels, parseRole, parseRunnerName, repoBaseDir, repoBaseOption } from '../options.js';

interface RunnerCliOptions {
  server: string;
  token?: string;
  labels?: Labels;
  name?: string;
  capacity: number;
  browserSlots: number;
  role?: string;
  workDir: string;
  repoBase?: string;
  updateCommand: string;
}

/**
 * `flotilla runner --server URL --token T [--labels k=v,...] [--name] [--capacity] [--work-dir
 * DIR]`: registers (first time; the credential is kept in the work folder), connects out to
 * the control plane and runs jobs until SIGINT/SIGTERM (its running jobs are stopped — SIGTERM, SIGKILL after up to 7 s, at once on a second signal — and given up as a crashed runner's are: retried elsewhere when their agent allows, else `lost`; the runner says so before it exits, and the server ends them then).
 * `--update-command CMD` (env FLOTILLA_UPDATE_COMMAND; default `npm install -g
 * "flotilla@$FLOTILLA_UPDATE_VERSION"`) is what `flotilla runners update` makes it run once its
 * jobs are done; on success it stops and runs its own command line again (runner/reexec.ts),
 * reconnecting on the new code with the same work folder and credential (and the same runner
 * instance id, passed in env FLOTILLA_RUNNER_INSTANCE: it is the same runner going on, which the
 * server lets replace its old connection; otherwise each process makes a new random one).
 * When the server ends the session for good (the runner was revoked, or another runner
 * process is connected with the same credential: each process needs its own registration) it
 * stops with the server's reason and exit code 1.
 */
export function registerRunner(program: Command, ctx: CliContext): void {
  program
    .command('runner')
    .description('run jobs for a control plane on this machine; runs until Ctrl-C')
    .addOption(new Option('--server <url>', 'control plane URL').env('FLOTILLA_SERVER').default(DEFAULT_SERVER))
    .addOption(new Option('--token <token>', 'registration token (flr_..., from `flotilla runners token create`); not needed once registered').env('FLOTILLA_RUNNER_TOKEN'))
    .addOption(new Option('--labels <k=v,...>', 'labels of this runner, e.g. os=linux,toolchain=node').env('FLOTILLA_LABELS').argParser(parseLabels))
    .addOption(new Option('--name <name>', 'runner name: 1-63 of A-Z a-z 0-9 . _ - (default: host name)').env('FLOTILLA_RUNNER_NAME').argParser(parseRunnerName))
    .addOption(new Option('--capacity <n>', 'parallel jobs (1-4)').env('FLOTILLA_CAPACITY').argParser(intIn(1, 4, 'capacity')).default(1))
    .addOption(new Option('--browser-slots <n>', 'browser slots (1-4, at most --capacity)').env('FLOTILLA_BROWSER_SLOTS').argParser(intIn(1, 4, 'browser-slots')).default(1))
    .addOption(new Option('--role <role>', 'role of this runner (label role=ROLE; agents asking for a role go only to runners with it)').env('FLOTILLA_ROLE').argParser(parseRole))
    .addOption(new Option('--work-dir <dir>', 'work folder: credential, workspaces, homes').env('FLOTILLA_WORK_DIR').default(join(defaultDataDir(), 'runner'), '~/.flotilla/runner'))
    .addOption(new Option('--update-command <cmd>', 'shell command `flotilla runners update` runs (env FLOTILLA_UPDATE_VERSION = the version); then the runner restarts itself').env('FLOTILLA_UPDATE_COMMAND').default(DEFAULT_UPDATE_COMMAND))
    .addOption(repoBaseOption())
    .action(async function (this: Command, opts: RunnerCliOptions) {
      const { io } = ctx;
      // An empty value given (a script's variable that expanded to nothing) is an error, never "unset".
      refuseEmptyOptions(this, ['server', 'token', 'workDir', 'repoBase']);
      if (!/^https?:\/\/[^/\s]+/i.test(opts.server.trim())) throw new CliError('--server (FLOTILLA_SERVER) must be an http:// or https:// URL, e.g. http://build-1:8787', 2);
      checkRoleLabels(opts.role, opts.labels);
      if (opts.browserSlots > opts.capacity) throw new CliError(`--browser-slots (FLOTILLA_BROWSER_SLOTS) is ${opts.browserSlots}, more than --capacity (FLOTILLA_CAPACITY) ${opts.capacity}: a runner has at most one browser slot per parallel job`, 2);
      await checkFolderOption('--work-dir', opts.workDir);
      // Made here, not by startRunner: Node's recursive mkdir spins for ever on a path such as /proc/nope (core/make-dir.ts).
      await makeFolderOption('--work-dir', opts.workDir);
      const repoBase = await repoBaseDir(opts.repoBase);
      const { cliLogger } = await import('./stack.js');
      const { startRunner, STOP_GRACE_MS } = await import('../../runner/runner.js');
      const { INSTANCE_ENV } = await import('../../runner/reexec.js');
      // One id per runner process; a process started again after a self-update goes on with its parent's.
      const handed = RunnerInstance.safeParse(process.env[INSTANCE_ENV]);
      const instance = handed.success ? handed.data : randomUUID();
      const log = cliLogger(process.env, 'info', (line) => void io.stderr.write(line));
      let restart = () => {};
      const restarting = new Promise<'restart'>((resolve) => (restart = () => resolve('restart')));
      const workDir = resolve(opts.workDir);
      const runner = await startRunner({
        serverUrl: opts.server,
        registrationToken: opts.token,
        // a token given here is a deliberate act: a revoked runner registers again with it (runner.ts)
        registerIfRevoked: opts.token !== undefined,
        workDir,
        name: opts.name,
        labels: opts.role !== undefined ? { ...opts.labels, role: opts.role } : opts.labels,
        capacity: opts.capacity,
        browserSlots: opts.browserSlots,
        repoBaseDir: repoBase,
        update: { command: opts.updateCommand, restart: () => restart() },
        instance,
        log,
      }).catch((err: unknown) => {
        // A revoked runner's credential, refused at start: say every step of registering again.
        if (err instanceof Error && (err as { code?: unknown }).code === 'runner_revoked') throw new CliError(revokedRunnerMessage(err.message, workDir), 1);
        throw err;
      });
      io.stdout.write(`flotilla: runner ${runner.runnerId} connected to ${opts.server}; press Ctrl-C to stop\n`);
      // Registered: the (spent) registration token leaves what `ps` shows (runner/argv-token.ts).
      const argv = process.argv.slice(2);
      if (argv.some((a) => a === '--token' || a.startsWith('--token='))) {
        const { withoutTokenArg } = await import('../../runner/argv-token.js');
        process.title = ['flotilla', ...withoutTokenArg(argv)].join(' ');
      }
      let offInterrupt = () => {};
      const interrupted = new Promise<'SIGINT' | 'SIGTERM'>((resolve) => (offInterrupt = onInterrupt(io, resolve)));
      const why = await Promise.race([interrupted, restarting, runner.ended]);
      if (typeof why !== 'string') {
        // Revoked, or another process holds this credential: reconnecting cannot help.
        offInterrupt();
        await runner.stop({ cancelJobs: true });
        throw new CliError(`runner stopped: ${revokedRunnerMessage(why.message, workDir)}`, 1);
      }
      if (why === 'restart') {
        // Updated (self-update.ts): no job runs; stop (the work folder is released), then run again.
        offInterrupt();
        io.stdout.write('flotilla: update installed: restarting the runner\n');
        await runner.stop({ cancelJobs: false });
        const { RESTART_EXIT_CODE, SUPERVISED_ENV, superviseRestarts } = await import('../../runner/reexec.js');
        // A runner its supervisor started asks it to start the new code; the first one becomes the supervisor.
        ctx.setExit(process.env[SUPERVISED_ENV] === '1' ? RESTART_EXIT_CODE : await superviseRestarts({ signals: io.signals, log, env: { ...process.env, [INSTANCE_ENV]: instance } }));
        return;
      }
      io.stdout.write(`flotilla: ${why}: stopping (running jobs are stopped, SIGKILL after up to ${STOP_GRACE_MS / 1000} s; Ctrl-C again kills them now; the server retries them elsewhere when their agent allows)\n`);
      // A second signal kills the jobs' processes at once, and the runner still says it gave
      // them up before it exits; a third gets Node's default: exit at once (the server then
      // ends the jobs when the runner's silence passes its heartbeat timeout).
      const offAgain = onInterrupt(io, (again) => {
        io.stdout.write(`flotilla: ${again} again: killing the running jobs now (once more: exit at once)\n`);
        void runner.stop({ cancelJobs: true, graceMs: 0 });
      });
      try {
        await runner.stop({ cancelJobs: true });
      } finally {
        offAgain();
      }
      ctx.setExit(0);
    });
}
