import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import type { Logger } from '../core/log.js';
import { monotonicMs, WatchdogReport, type WatchdogCommand } from './watchdog-protocol.js';

/**
 * The runner's side of its job watchdog (watchdog-process.ts): a process of its own that stops
 * the runner's jobs when the runner stops renewing its lease (frozen, killed). Started when the
 * first job process group is watched, not before (an idle runner costs no process), and started
 * again with the same state if it dies while jobs run.
 *
 * The script is the built `dist/runner/watchdog-process.js`; the URL below resolves to it from
 * both `src/runner/` and `dist/runner/`. Without it (a source checkout never built) the runner
 * runs without a watchdog and says so once.
 */
export const WATCHDOG_SCRIPT = fileURLToPath(new URL('../../dist/runner/watchdog-process.js', import.meta.url));

/** Options of a {@link JobWatchdog}. */
export interface JobWatchdogOptions {
  log: Logger;
  /** Default {@link WATCHDOG_SCRIPT}. */
  script?: string;
}

/** Talks to the watchdog process (module comment). Methods never throw. */
export class JobWatchdog {
  private child: ChildProcess | null = null;
  private readonly watched = new Map<number, string>();
  /** The last renewal, resent as it is to a restarted watchdog (its deadlines are absolute). */
  private lastRenew: WatchdogCommand | null = null;
  private closed = false;
  private missingSaid = false;

  constructor(private readonly o: JobWatchdogOptions) {}

  /** Pid of the watchdog process while one runs (diagnostics, tests). */
  get pid(): number | null {
    return this.child?.pid ?? null;
  }

  /** Job processes in group `pgid`, marked `FLOTILLA_RUN=<marker>`, are to be stopped with the lease. */
  watch(pgid: number, marker: string): void {
    if (this.closed || pgid <= 1) return;
    this.watched.set(pgid, marker);
    if (!this.child && !this.start()) return;
    this.write({ watch: pgid, marker });
  }

  /** Group `pgid` is gone. */
  unwatch(pgid: number): void {
    if (!this.watched.delete(pgid)) return;
    this.write({ unwatch: pgid });
  }

  /**
   * The lease was renewed: unless renewed again, the watchdog sends SIGTERM to the watched jobs
   * `termInMs` from now and SIGKILL `killInMs` from now (ms; absolute deadlines: a watchdog
   * that reads this late does not move them).
   */
  renew(termInMs: number, killInMs: number): void {
    this.lastRenew = { renew: { at: { mono: monotonicMs(), wall: Date.now() }, termInMs: Math.max(0, termInMs), killInMs: Math.max(0, termInMs, killInMs) } };
    this.write(this.lastRenew);
  }

  /**
   * No more jobs will be watched: ends the watchdog's stdin. It exits at once when nothing is
   * watched; otherwise it stops those jobs at the last deadlines, then exits.
   */
  close(): void {
    this.closed = true;
    this.child?.stdin?.end();
  }

  private write(cmd: WatchdogCommand): void {
    const stdin = this.child?.stdin;
    if (!stdin || stdin.destroyed || !stdin.writable) return;
    stdin.write(JSON.stringify(cmd) + '\n');
  }

  /** Starts the watchdog and gives it the current state. False when it cannot be started. */
  private start(): boolean {
    const script = this.o.script ?? WATCHDOG_SCRIPT;
    if (!existsSync(script)) {
      if (!this.missingSaid) this.o.log.warn('job watchdog not found (run npm run build): jobs keep running if this runner process is frozen or killed', { script });
      this.missingSaid = true;
      return false;
    }
    // Its own session and process group: a signal to the runner's group (Ctrl-Z) does not stop
    // it. Only PATH in its environment: it needs no secret.
    const child = spawn(process.execPath, [script], { detached: true, stdio: ['pipe', 'pipe', 'pipe'], env: { PATH: process.env.PATH ?? '/usr/bin:/bin' } });
    this.child = child;
    child.stdin?.on('error', () => undefined); // it died: 'exit' below starts another
    createInterface({ input: child.stdout! }).on('line', (line) => this.onReport(line));
    createInterface({ input: child.stderr! }).on('line', (line) => this.o.log.warn('job watchdog', { stderr: line.slice(0, 500) }));
    child.once('exit', (code, signal) => {
      if (this.child === child) this.child = null;
      if (this.closed) return;
      this.o.log.warn('job watchdog exited; starting it again', { code, signal });
      if (this.watched.size > 0 && this.start()) for (const [pgid, marker] of this.watched) this.write({ watch: pgid, marker });
    });
    child.on('error', (err) => this.o.log.warn('job watchdog could not run', { error: err.message }));
    // The runner may exit while the watchdog runs on (it outlives a killed runner on purpose).
    child.unref();
    for (const s of [child.stdin, child.stdout, child.stderr]) (s as unknown as { unref?: () => void } | null)?.unref?.();
    if (this.lastRenew) this.write(this.lastRenew);
    return true;
  }

  private onReport(line: string): void {
    let r: WatchdogReport;
    try {
      r = WatchdogReport.parse(JSON.parse(line));
    } catch {
      this.o.log.warn('job watchdog', { output: line.slice(0, 500) });
      return;
    }
    if ('error' in r) this.o.log.warn('job watchdog refused a command', { error: r.error });
    else {
      this.watched.delete(r.stopped);
      this.o.log.warn('job watchdog stopped a job: this runner did not renew its lease in time (was it frozen?)', { pgid: r.stopped, silentMs: r.silentMs, ...(r.left.length ? { left: r.left } : {}) });
    }
  }
}
