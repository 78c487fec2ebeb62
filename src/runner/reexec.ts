import { spawn } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import type { EventEmitter } from 'node:events';
import type { Logger } from '../core/log.js';
import { withoutTokenArg } from './argv-token.js';

/**
 * Set (to `1`) in the environment of a runner process started by {@link superviseRestarts}: after
 * a self-update it exits with {@link RESTART_EXIT_CODE} and the supervisor starts it again,
 * instead of starting a process of its own (a chain that would grow by one per update).
 */
export const SUPERVISED_ENV = 'FLOTILLA_RUNNER_SUPERVISED';

/**
 * The runner's instance id (`hello.instance`) handed to the process started again after a
 * self-update (cli/local/runner.ts): the same runner going on, so the server lets it replace
 * its old connection at once instead of refusing it as a second process.
 */
export const INSTANCE_ENV = 'FLOTILLA_RUNNER_INSTANCE';

/** Exit code of a supervised runner asking to be started again (EX_TEMPFAIL). */
export const RESTART_EXIT_CODE = 75;

const SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;
const SETPRIV = '/usr/bin/setpriv';

/** What {@link superviseRestarts} runs: by default this process's own command line. */
export interface SuperviseOptions {
  /** Default process.execPath. */
  execPath?: string;
  /** Node options, then the script and its arguments; default [...process.execArgv, ...process.argv.slice(1)] without `--token` (argv-token.ts: spent, and kept out of `ps`). */
  args?: readonly string[];
  /** Default process.env (plus {@link SUPERVISED_ENV}). */
  env?: NodeJS.ProcessEnv;
  /** Where SIGINT/SIGTERM/SIGHUP come from; default process. Each is passed on to the runner. */
  signals?: Pick<EventEmitter, 'on' | 'off'>;
  log: Logger;
}

/**
 * Re-executes the runner after a self-update: starts this process's command line again (same
 * argv but the spent registration token, so the same work folder and credential; the new code is what is installed now) and
 * waits for it, starting it again each time it exits with {@link RESTART_EXIT_CODE} (a later
 * update). The caller, the old runner, has stopped and released its work folder first. The new
 * process inherits stdio, runs in its own process group (a terminal's Ctrl-C reaches it once,
 * passed on from here) and, on Linux with setpriv, gets SIGTERM when this process dies.
 * @returns the last run's exit code (128 + signal number when killed by a signal).
 */
export async function superviseRestarts(o: SuperviseOptions): Promise<number> {
  const execPath = o.execPath ?? process.execPath;
  const args = o.args ?? [...process.execArgv, ...withoutTokenArg(process.argv.slice(1))];
  const env = { ...(o.env ?? process.env), [SUPERVISED_ENV]: '1' };
  const signals = o.signals ?? process;
  for (;;) {
    const [file, argv] = withParentDeathTerm(execPath, [...args]);
    o.log.info('starting the runner again on the updated code', { command: [execPath, ...args].join(' ') });
    const child = spawn(file, argv, { env, stdio: 'inherit', detached: process.platform !== 'win32' });
    const forward = SIGNALS.map((sig) => {
      const h = () => {
        try {
          child.kill(sig);
        } catch {
          // already gone
        }
      };
      signals.on(sig, h);
      return () => signals.off(sig, h);
    });
    const code = await new Promise<number>((resolve) => {
      child.once('error', (err) => {
        o.log.error('could not start the runner again', { err: String(err) });
        resolve(1);
      });
      child.once('exit', (c, sig) => resolve(c ?? 128 + signalNumber(sig)));
    });
    for (const off of forward) off();
    if (code !== RESTART_EXIT_CODE) return code;
  }
}

/** `[setpriv, --pdeathsig TERM -- file ...args]` on Linux with setpriv (the runner stops cleanly if its supervisor dies), else as given. */
function withParentDeathTerm(file: string, args: string[]): [string, string[]] {
  if (process.platform !== 'linux') return [file, args];
  try {
    accessSync(SETPRIV, constants.X_OK);
  } catch {
    return [file, args];
  }
  return [SETPRIV, ['--pdeathsig', 'TERM', '--', file, ...args]];
}

function signalNumber(sig: NodeJS.Signals | null): number {
  return sig === 'SIGINT' ? 2 : sig === 'SIGKILL' ? 9 : sig === 'SIGHUP' ? 1 : 15;
}
