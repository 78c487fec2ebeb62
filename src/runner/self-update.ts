import { spawn } from 'node:child_process';
import { redact, type Logger } from '../core/log.js';
import type { RunnerToServer } from '../protocol/index.js';

/**
 * The update command a runner runs when none is configured (`--update-command`, env
 * `FLOTILLA_UPDATE_COMMAND`): installs the asked version of the package globally. Run by
 * `sh -c` with the version in env `FLOTILLA_UPDATE_VERSION` (never pasted into the text).
 */
export const DEFAULT_UPDATE_COMMAND = 'npm install -g "flotilla@$FLOTILLA_UPDATE_VERSION"';

/** How long the update command may run before it is killed (whole process group) and the update fails, ms. */
export const DEFAULT_UPDATE_TIMEOUT_MS = 10 * 60_000;

/** Lines of the failed command's output (stderr, else stdout) a failure report carries. */
const TAIL_LINES = 10;
/** Characters of output kept while the command runs (the tail), and at most in a report. */
const KEEP_CHARS = 16_384;
const DETAIL_CHARS = 1500;

/** How a runner updates itself (`runner.update`); see {@link SelfUpdater}. */
export interface UpdateSettings {
  /** Shell command (`sh -c`), env `FLOTILLA_UPDATE_VERSION` = the version asked for. Default {@link DEFAULT_UPDATE_COMMAND}. */
  command?: string;
  /** Kill the command after this long, ms; default {@link DEFAULT_UPDATE_TIMEOUT_MS}. */
  timeoutMs?: number;
  /**
   * Called once the command succeeded: stop this runner and start it again on the new code
   * (the `flotilla runner` command re-executes itself, runner/reexec.ts). Absent: the runner
   * cannot restart itself (it runs inside `flotilla up`), and an update fails before the
   * command runs.
   */
  restart?: () => void;
}

/** The outcome of {@link runUpdateCommand}. `exitCode` null: killed (timeout, signal) or not started. */
export interface UpdateCommandResult {
  ok: boolean;
  exitCode: number | null;
  /** Why it failed: the last lines of its stderr (else stdout), secrets masked; '' on success. */
  detail: string;
}

/**
 * Runs the update command `command` with `sh -c` in its own process group, env
 * `FLOTILLA_UPDATE_VERSION=version` (and without `FLOTILLA_RUNNER_TOKEN`, the registration
 * token), stdin closed. Past `timeoutMs` the group gets SIGKILL. Each of `secrets` (the runner
 * credential, ...) and every known token shape (core/log.ts `redact`) is masked in `detail`.
 * Never throws.
 */
export function runUpdateCommand(command: string, version: string, o: { timeoutMs: number; cwd: string; secrets: readonly string[] }): Promise<UpdateCommandResult> {
  return new Promise((resolve) => {
    const env: NodeJS.ProcessEnv = { ...process.env, FLOTILLA_UPDATE_VERSION: version };
    delete env.FLOTILLA_RUNNER_TOKEN;
    let out = '';
    let err = '';
    const keep = (s: string, d: Buffer) => (s + d.toString('utf8')).slice(-KEEP_CHARS);
    const child = spawn('sh', ['-c', command], { cwd: o.cwd, env, stdio: ['ignore', 'pipe', 'pipe'], detached: process.platform !== 'win32' });
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      try {
        if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
      } catch {
        child.kill('SIGKILL');
      }
    }, o.timeoutMs);
    child.stdout.on('data', (d: Buffer) => (out = keep(out, d)));
    child.stderr.on('data', (d: Buffer) => (err = keep(err, d)));
    const finish = (exitCode: number | null, why: string) => {
      clearTimeout(timer);
      const ok = exitCode === 0 && !timedOut;
      resolve({ ok, exitCode, detail: ok ? '' : failureDetail(why, err.trim() ? err : out, o.secrets) });
    };
    child.on('error', (e) => finish(null, `could not start sh: ${e.message}`));
    child.on('close', (code, signal) => {
      if (timedOut) return finish(null, `timed out after ${+(o.timeoutMs / 1000).toFixed(1)} s`);
      if (code === null) return finish(null, `killed by ${signal ?? 'a signal'}`);
      finish(code, '');
    });
  });
}

/**
 * A failure report's text: `why` (if any) and the last {@link TAIL_LINES} non-empty lines of
 * `output`, each of `secrets` replaced by `***` and known token shapes masked, at most
 * {@link DETAIL_CHARS} characters (the end kept).
 */
export function failureDetail(why: string, output: string, secrets: readonly string[]): string {
  let tail = output
    .split(/\r?\n/)
    .filter((l) => l.trim() !== '')
    .slice(-TAIL_LINES)
    .join('\n');
  for (const s of secrets) if (s.length >= 4) tail = tail.split(s).join('***');
  tail = redact(tail);
  // Credentials in URLs (a registry URL with user:password@).
  tail = tail.replace(/(\b[a-z][a-z0-9+.-]*:\/\/)[^\s/@:]+:[^\s/@]+@/gi, '$1***@');
  // npm registry tokens (npm_...), and _authToken=... lines of an .npmrc echoed back.
  tail = tail.replace(/\bnpm_[A-Za-z0-9]{8,}/g, 'npm_***').replace(/(_auth(?:Token)?\s*=\s*)\S+/gi, '$1***');
  const text = [why, tail].filter((s) => s !== '').join(': ');
  return text.length > DETAIL_CHARS ? '…' + text.slice(-(DETAIL_CHARS - 1)) : text;
}

/** What {@link SelfUpdater} needs from the runner. */
export interface SelfUpdaterDeps {
  settings: UpdateSettings;
  /** Sends a frame when connected (a report lost to a disconnect is made good by `hello.updating`). */
  send: (msg: RunnerToServer) => void;
  /** Resolves when no job of this runner is running (none is taken meanwhile). */
  idle: () => Promise<void>;
  /** Secrets to mask in a failure report (the runner credential, its registration token). */
  secrets: () => string[];
  /** Where the command runs (the work folder). */
  cwd: string;
  log: Logger;
}

/**
 * A runner's self-update (server frame `runner.update`): from {@link start} it takes no new job
 * ({@link updating} is the version; the runner rejects assignments and says so in `hello`), waits
 * for its running jobs to finish (`draining`), runs the update command (`installing`), and on
 * success reports `restarting` and calls `settings.restart`; on failure (or when it cannot
 * restart itself) it reports `failed` with the exit code and the command's last output lines
 * (secrets masked) and takes jobs again.
 */
export class SelfUpdater {
  /** The version being installed, or null when not updating. */
  updating: string | null = null;

  constructor(private readonly d: SelfUpdaterDeps) {}

  /** Starts an update to `version`; a repeat while one runs is ignored. */
  start(version: string): void {
    if (this.updating !== null) {
      this.d.log.info('update already in progress; repeat ignored', { version: this.updating });
      return;
    }
    this.updating = version;
    void this.run(version);
  }

  private async run(version: string): Promise<void> {
    const { d } = this;
    d.log.info('update requested: taking no new jobs, waiting for running ones', { version });
    d.send({ type: 'runner.update', phase: 'draining', version });
    await d.idle();
    if (!d.settings.restart) return this.fail(version, null, 'this runner cannot restart itself (it runs inside `flotilla up`): update the package and restart it by hand');
    d.send({ type: 'runner.update', phase: 'installing', version });
    const command = d.settings.command ?? DEFAULT_UPDATE_COMMAND;
    d.log.info('running the update command', { version });
    const r = await runUpdateCommand(command, version, { timeoutMs: d.settings.timeoutMs ?? DEFAULT_UPDATE_TIMEOUT_MS, cwd: d.cwd, secrets: d.secrets() });
    if (!r.ok) return this.fail(version, r.exitCode, r.detail);
    d.log.info('update installed; restarting', { version });
    d.send({ type: 'runner.update', phase: 'restarting', version });
    d.settings.restart();
  }

  private fail(version: string, exitCode: number | null, detail: string): void {
    this.d.log.warn('update failed; taking jobs again', { version, exitCode, detail });
    this.updating = null;
    this.d.send({ type: 'runner.update', phase: 'failed', version, exitCode, ...(detail ? { detail: detail.slice(0, 2000) } : {}) });
  }
}
