import { spawn, type ChildProcess } from 'node:child_process';
import { accessSync, constants, readdirSync, readFileSync, statSync } from 'node:fs';
import type { Readable } from 'node:stream';

/**
 * A harness process in its own process group (pgid = its pid), stdin from /dev/null (or a
 * given text, then EOF),
 * stdout/stderr piped. Killing it kills the whole group, including descendants it started.
 */
export interface GroupProcess {
  /** The leader's pid, which is also the process group id. */
  readonly pid: number;
  readonly stdout: Readable;
  readonly stderr: Readable;
  /**
   * Resolves when the leader exited, with its exit code or the signal that ended it (its
   * descendants may still run and hold stdout open). Never rejects; a spawn failure resolves
   * with `spawnError` set.
   */
  readonly exited: Promise<ProcessExit>;
  /** Resolves when stdout and stderr are closed (every holder of the pipes is gone). */
  readonly closed: Promise<void>;
  /**
   * SIGTERM to the group, wait up to `graceMs` for it to be empty, then SIGKILL the group
   * repeatedly until no live member is left (descendants spawned meanwhile die too).
   * Resolves when the group is gone. Safe to call more than once and after exit; a later call
   * whose grace ends sooner shortens the kill under way (`graceMs` 0: SIGKILL at once), a
   * longer one never lengthens it.
   */
  kill(graceMs: number): Promise<void>;
}

/** How a process ended. `code` is null when a signal ended it. */
export interface ProcessExit {
  code: number | null;
  signal: NodeJS.Signals | null;
  /** Set when the process could not be started at all (e.g. ENOENT: no such executable). */
  spawnError?: Error;
}

/** Options for {@link spawnGroup}. `env` REPLACES the environment (nothing is inherited). */
export interface SpawnGroupOptions {
  cwd: string;
  env: Record<string, string>;
  /** Written to the child's stdin, which is then closed (EOF). Absent: stdin is /dev/null. */
  stdin?: string;
}

/** util-linux's setpriv (Debian: always present): sets the parent-death signal, then execs. */
const SETPRIV = '/usr/bin/setpriv';

/**
 * On Linux, runs `file` through `setpriv --pdeathsig KILL` so the harness leader is killed by
 * the kernel (prctl PR_SET_PDEATHSIG) the moment this runner process dies, even by SIGKILL:
 * a runner that crashes must not leave an agent running and spending on the gateway. setpriv
 * execs `file` in place, so the pid (= process group id) is the harness's own. The leader's
 * descendants are reaped by the next runner start (orphans.ts). Without setpriv, or when
 * `file` is not an executable we can see (so the spawn error stays ENOENT), `file` is
 * started directly.
 */
function withParentDeathSignal(file: string, args: string[], env: Record<string, string>): [string, string[]] {
  if (process.platform !== 'linux' || !isExecutable(SETPRIV)) return [file, args];
  const resolved = file.includes('/') ? file : (env.PATH ?? '').split(':').map((d) => `${d}/${file}`).find(isExecutable);
  if (!resolved || !isExecutable(resolved)) return [file, args];
  return [SETPRIV, ['--pdeathsig', 'KILL', '--', resolved, ...args]];
}

function isExecutable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

/**
 * Starts `file args...` (no shell) as the leader of a new process group.
 * @throws never; a failure to start shows as `exited` resolving with `spawnError`.
 */
export function spawnGroup(file: string, args: string[], opts: SpawnGroupOptions): GroupProcess {
  const [cmd, argv] = withParentDeathSignal(file, args, opts.env);
  const child: ChildProcess = spawn(cmd, argv, {
    cwd: opts.cwd,
    env: opts.env,
    detached: true,
    stdio: [opts.stdin === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
  });
  const pid = child.pid ?? -1;
  if (opts.stdin !== undefined && child.stdin) {
    // A child that exits without reading all of it gives EPIPE: harmless, it chose not to read.
    child.stdin.on('error', () => undefined);
    child.stdin.end(opts.stdin);
  }
  let spawnFailed: ((e: ProcessExit) => void) | null = null;
  const exited = new Promise<ProcessExit>((resolve) => {
    spawnFailed = resolve;
    child.once('exit', (code, signal) => resolve({ code, signal }));
  });
  const closed = new Promise<void>((resolve) => {
    child.once('close', () => resolve());
  });
  child.on('error', (err) => {
    // 'error' without a pid = spawn failure ('exit' never follows). Later errors (a failed
    // kill of an already-dead process) are harmless here.
    if (child.pid === undefined) spawnFailed?.({ code: null, signal: null, spawnError: err });
  });
  let killing: Promise<void> | null = null;
  const until: KillDeadline = { at: Infinity };
  return {
    pid,
    stdout: child.stdout as Readable,
    stderr: child.stderr as Readable,
    exited,
    closed: Promise.race([closed, exited.then((e) => (e.spawnError ? undefined : closed))]),
    kill(graceMs: number): Promise<void> {
      if (pid <= 0) return Promise.resolve();
      const at = Date.now() + Math.max(0, graceMs);
      if (killing && at < until.at && at <= Date.now()) {
        // No grace left: SIGKILL now, not at the kill's next poll (an error shows there).
        try {
          signalGroup(pid, 'SIGKILL');
        } catch {
          // reported by the kill under way
        }
      }
      until.at = Math.min(until.at, at);
      killing ??= killGroupUntil(pid, until);
      return killing;
    },
  };
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/**
 * Kills process group `pgid`: SIGTERM, up to `graceMs` for it to empty, then SIGKILL until no
 * live member remains. A zombie member (dead, waiting for a reaper) counts as gone.
 */
export function killGroup(pgid: number, graceMs: number): Promise<void> {
  return killGroupUntil(pgid, { at: Date.now() + Math.max(0, graceMs) });
}

/** When a kill's grace ends (epoch ms); a caller may move it earlier while the kill runs. */
interface KillDeadline {
  at: number;
}

/** {@link killGroup} with a grace ending at `until.at`, read again at every poll (≤ 25 ms apart). */
async function killGroupUntil(pgid: number, until: KillDeadline): Promise<void> {
  if (!signalGroup(pgid, until.at <= Date.now() ? 'SIGKILL' : 'SIGTERM')) return;
  while (Date.now() < until.at) {
    if (!groupAlive(pgid)) return;
    await sleep(Math.min(25, Math.max(1, until.at - Date.now())));
  }
  while (groupAlive(pgid)) {
    signalGroup(pgid, 'SIGKILL');
    await sleep(10);
  }
}

/** Sends `sig` to every member of group `pgid`. False when the group no longer exists. */
function signalGroup(pgid: number, sig: NodeJS.Signals): boolean {
  try {
    process.kill(-pgid, sig);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ESRCH') return false;
    throw err;
  }
}

/**
 * True while group `pgid` has a live (non-zombie) member. Uses `kill(-pgid, 0)`; on Linux,
 * members that are only zombies (killed, not yet reaped by init) count as gone.
 */
export function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ESRCH') return false;
    if (code === 'EPERM') return true;
    throw err;
  }
  if (process.platform !== 'linux') return true;
  return liveMembersLinux(pgid) !== 0;
}

/** Number of non-zombie processes in group `pgid`, from /proc; -1 when /proc is unreadable. */
function liveMembersLinux(pgid: number): number {
  let names: string[];
  try {
    names = readdirSync('/proc');
  } catch {
    return -1;
  }
  let live = 0;
  for (const name of names) {
    if (!/^\d+$/.test(name)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${name}/stat`, 'utf8');
    } catch {
      continue; // exited meanwhile
    }
    // "pid (comm) state ppid pgrp ..." — comm may contain spaces or parens: parse after the last ')'.
    const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const state = rest[0];
    const pgrp = Number(rest[2]);
    if (pgrp === pgid && state !== 'Z' && state !== 'X') live++;
  }
  return live;
}
