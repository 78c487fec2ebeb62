import { createInterface } from 'node:readline';
import { pathToFileURL } from 'node:url';
import type { Readable } from 'node:stream';
import { processStartTime } from '../core/pid-lock.js';
import { groupAlive, killGroup } from './process.js';
import { killJobProcesses } from './proc-tree.js';
import { monotonicMs, WatchdogCommand, type WatchdogReport } from './watchdog-protocol.js';

/**
 * The job watchdog: a small process of its own (its own process group and session) that stops
 * a runner's jobs when the runner stops renewing its lease — the runner process frozen
 * (SIGSTOP, Ctrl-Z, a debugger), starved, or killed (SIGKILL, a crash: its stdin ends). The
 * runner's own lease (lease.ts) cannot act while the runner is frozen, but the job processes
 * are separate process groups that run on; without this the server gives the job to another
 * runner after its heartbeat timeout and both copies run at once.
 *
 * It acts on the absolute deadlines of the last `renew` (watchdog-protocol.ts; a deadline has
 * passed when it has on the monotonic or the wall clock): SIGTERM to each watched group at the
 * first, SIGKILL at the second, then every process still carrying the job's marker. A deadline
 * seen passed is acted on only after the input already waiting has been read (a watchdog that
 * was itself stopped finds the renewals sent meanwhile first, and leaves healthy jobs alone). A group whose
 * leader pid now belongs to another process (start time changed) is left alone. When its
 * stdin ends (the runner died, or closed it after its jobs ended) it stops what is still watched
 * at once, with the last renewal's grace, and exits once nothing is watched.
 */

/** How often the deadlines are looked at, ms (timers of a suspended host run late). */
const POLL_MS = 100;

/** A moment on both clocks, ms. */
interface Moment {
  mono: number;
  wall: number;
}

interface Watched {
  marker: string;
  startTime: string | null;
}

/** Options of {@link runWatchdog} (tests give their own streams and clock). */
export interface WatchdogProcessOptions {
  input: Readable;
  /** One report line each (no newline). */
  report: (line: string) => void;
  /** Default: {@link monotonicMs} and Date.now. */
  clocks?: { mono: () => number; wall: () => number };
  /** Called once, when stdin has ended and nothing is left to watch. */
  onDone: () => void;
}

/** Runs the watchdog on `input` until it is done (module comment). */
export function runWatchdog(o: WatchdogProcessOptions): void {
  const clocks = o.clocks ?? { mono: monotonicMs, wall: Date.now };
  const watched = new Map<number, Watched>();
  /** The last renewal: when it was written, on both clocks, and its deadlines after that, ms. */
  let renewal: { at: Moment; termInMs: number; killInMs: number } | null = null;
  let ended = false;
  let stopping = false;
  let confirming = false;
  const send = (r: WatchdogReport) => o.report(JSON.stringify(r));
  const now = (): Moment => ({ mono: clocks.mono(), wall: clocks.wall() });
  /** Ms since `at`, the larger of the two clocks' readings. */
  const since = (at: Moment, t: Moment) => Math.max(t.mono - at.mono, t.wall - at.wall);

  const stopAll = async () => {
    stopping = true;
    const t = now();
    const silentMs = renewal === null ? 0 : since(renewal.at, t);
    const graceMs = renewal === null ? 0 : Math.max(0, renewal.killInMs - silentMs);
    renewal = null; // a new renewal arms it again
    const groups = [...watched.entries()];
    await Promise.all(
      groups.map(async ([pgid, w]) => {
        const st = processStartTime(pgid);
        const reused = st !== null && w.startTime !== null && st !== w.startTime;
        if (!reused && groupAlive(pgid)) await killGroup(pgid, graceMs).catch(() => undefined);
        const left = await killJobProcesses(w.marker, reused ? undefined : pgid, 2000);
        watched.delete(pgid);
        send({ stopped: pgid, marker: w.marker, silentMs: Math.round(silentMs), left });
      }),
    );
    stopping = false;
  };

  const due = () => watched.size > 0 && renewal !== null && since(renewal.at, now()) >= renewal.termInMs;
  const tick = () => {
    if (stopping || confirming) return;
    if (due()) {
      // Timers run before pending input is read: look again once it has been (setImmediate runs
      // after the loop's I/O poll), so renewals that waited in the pipe count.
      confirming = true;
      setImmediate(() => {
        confirming = false;
        if (!stopping && due()) void stopAll();
      });
      return;
    }
    if (ended && watched.size === 0) {
      clearInterval(timer);
      o.onDone();
    }
  };
  const timer = setInterval(tick, POLL_MS);

  const lines = createInterface({ input: o.input, crlfDelay: Infinity });
  lines.on('line', (line) => {
    let cmd: WatchdogCommand;
    try {
      cmd = WatchdogCommand.parse(JSON.parse(line));
    } catch (err) {
      send({ error: `unreadable command: ${(err as Error).message.slice(0, 200)}` });
      return;
    }
    if ('watch' in cmd) watched.set(cmd.watch, { marker: cmd.marker, startTime: processStartTime(cmd.watch) });
    else if ('unwatch' in cmd) watched.delete(cmd.unwatch);
    else if (renewal === null || since(renewal.at, cmd.renew.at) >= 0) {
      renewal = { at: cmd.renew.at, termInMs: cmd.renew.termInMs, killInMs: Math.max(cmd.renew.termInMs, cmd.renew.killInMs) };
    }
  });
  lines.on('close', () => {
    // The runner is gone (killed, or it closed us): no one will report these jobs or renew
    // their lease, so what is still watched stops now, with the last renewal's grace.
    ended = true;
    const graceMs = renewal === null ? 0 : renewal.killInMs - renewal.termInMs;
    renewal = { at: now(), termInMs: 0, killInMs: graceMs };
    tick();
  });
}

// Started as a process of its own: `node watchdog-process.js` (watchdog.ts).
if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  runWatchdog({ input: process.stdin, report: (l) => process.stdout.write(l + '\n'), onDone: () => process.exit(0) });
}
