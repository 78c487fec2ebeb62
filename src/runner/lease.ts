import { performance } from 'node:perf_hooks';
import type { Logger } from '../core/log.js';

/**
 * The runner's side of its lease on its running jobs (issue: a job ran twice at once).
 *
 * The server declares a runner lost — its jobs `lost`, or retried on another runner — once it
 * has not recorded a heartbeat from it for `heartbeatTimeoutMs` (server/sweeper.ts). It
 * records one (store touchRunner) only after the frame reached it, so it can do so no earlier
 * than `confirmedAt + timeoutMs`, where `confirmedAt` is the latest moment this runner KNOWS the
 * server heard from it: the send time of the `hello` a `welcome` answered, or of the last
 * heartbeat sent before a WebSocket ping the server answered with a pong (one TCP stream: the
 * pong proves every frame sent before the ping arrived). The runner must therefore have every
 * process of its jobs gone before then: it starts stopping them at {@link LeaseTimes.stopAfterMs}
 * after `confirmedAt` with a kill grace of at most {@link LeaseTimes.killGraceMs}, which ends
 * {@link LeaseTimes.marginMs} before the server's earliest moment. Silence shorter than that
 * stops nothing.
 *
 * Times are on a clock that never runs slower than real time (see {@link leaseClock}): a
 * runner frozen (SIGSTOP) or suspended (a laptop lid) finds the deadline passed when it wakes,
 * through {@link Lease.check}, which the session and runner call before anything else they do
 * on any event (a frame, a pong, a close, a reconnect, an upload).
 */

/** The lease timings for one server timeout, ms. */
export interface LeaseTimes {
  /** The server's heartbeat timeout. */
  timeoutMs: number;
  /** Kept free before the server's earliest moment: timer lateness, reaping, clock rates. T/10, at least 50. */
  marginMs: number;
  /** SIGTERM → SIGKILL grace for jobs stopped by the lease: min(runner grace, T/5). */
  killGraceMs: number;
  /** When stopping starts, after the last confirmation: T − margin − kill grace (≥ 0.7 T). */
  stopAfterMs: number;
}

/**
 * The timings for server timeout `timeoutMs` (ms) and the runner's usual kill grace `graceMs`
 * (ms). E.g. T = 20000, grace 10000: stop 14000 ms after the last confirmed heartbeat with a
 * 4000 ms grace, every process gone by 18000 ms.
 * @throws Error when `timeoutMs` is not a positive number.
 */
export function leaseTimes(timeoutMs: number, graceMs: number): LeaseTimes {
  if (!(timeoutMs > 0)) throw new Error(`lease: heartbeat timeout must be positive, got ${timeoutMs}`);
  const marginMs = Math.max(50, Math.round(timeoutMs / 10));
  const killGraceMs = Math.max(0, Math.min(graceMs, Math.round(timeoutMs / 5)));
  return { timeoutMs, marginMs, killGraceMs, stopAfterMs: Math.max(0, timeoutMs - marginMs - killGraceMs) };
}

/**
 * The heartbeat timeout to assume from a `welcome`, ms: its `heartbeatTimeoutMs`; from an older
 * server that does not send it, twice the interval — the shortest timeout any server accepts
 * (server.ts refuses a timeout under two intervals), so never later than the server's.
 */
export function serverTimeoutMs(welcome: { heartbeatIntervalMs: number; heartbeatTimeoutMs?: number | undefined }): number {
  return welcome.heartbeatTimeoutMs ?? 2 * welcome.heartbeatIntervalMs;
}

/**
 * A clock in ms that advances by max(monotonic, wall-clock) elapsed between readings: the
 * monotonic clock does not count a host's suspend (CLOCK_MONOTONIC), while the server's clock
 * does; the wall clock counts it but may be stepped. Taking the larger step never makes a
 * lease look younger than it is (a wall clock stepped forward can only stop jobs early).
 */
export function leaseClock(mono: () => number = () => performance.now(), wall: () => number = Date.now): () => number {
  let lastMono = mono();
  let lastWall = wall();
  let t = 0;
  return () => {
    const m = mono();
    const w = wall();
    t += Math.max(0, m - lastMono, w - lastWall);
    lastMono = m;
    lastWall = w;
    return t;
  };
}

/** Options of a {@link Lease}. */
export interface LeaseOptions {
  /** The runner's usual SIGTERM → SIGKILL grace for a job, ms. */
  graceMs: number;
  /**
   * The lease ran out: stop every running job now, each process gone within `graceMs` (ms; 0
   * when the deadline has passed already: kill at once). `silentMs`: time since the last
   * confirmation. Called once per expiry, synchronously from {@link Lease.check}.
   */
  onExpire: (graceMs: number, silentMs: number, times: LeaseTimes) => void;
  /**
   * The lease was renewed (or its timings changed): unless renewed again, it expires in
   * `stopInMs` (ms from now). The job watchdog (watchdog.ts) is told, so that it can stop the
   * jobs when this process cannot.
   */
  onRenew?: (stopInMs: number, times: LeaseTimes) => void;
  /** Default {@link leaseClock}(). */
  now?: () => number;
  log: Logger;
}

/** How often the lease looks at the clock while armed, at most, ms (a suspended host's timers do not count the suspend). */
const POLL_MS = 500;

/**
 * Tracks the last confirmed moment and fires `onExpire` when jobs must stop (module comment).
 * Not armed before the first {@link confirm} and after {@link close}.
 */
export class Lease {
  private confirmedAt: number | null = null;
  private timeoutMs: number | null = null;
  private times: LeaseTimes | null = null;
  private timer: NodeJS.Timeout | null = null;
  private expiredFlag = false;
  private closed = false;
  readonly now: () => number;

  constructor(private readonly o: LeaseOptions) {
    this.now = o.now ?? leaseClock();
  }

  /** The server's heartbeat timeout, ms (from each `welcome`: {@link serverTimeoutMs}). */
  setTimeoutMs(ms: number): void {
    this.timeoutMs = ms;
    this.times = leaseTimes(ms, this.o.graceMs);
    this.arm();
    if (!this.expiredFlag) this.renewed();
  }

  /** Timings in effect; null before the first welcome. */
  get current(): LeaseTimes | null {
    return this.times;
  }

  /** True from an expiry until a confirmation that renews the lease. */
  get expired(): boolean {
    return this.expiredFlag;
  }

  /**
   * The server provably received a `hello` or `heartbeat` sent at `sentAt` (this lease's clock,
   * {@link now}). Renews the lease unless that is already too old to (then it stays expired).
   */
  confirm(sentAt: number): void {
    if (this.confirmedAt !== null && sentAt <= this.confirmedAt) return;
    this.confirmedAt = sentAt;
    if (this.times && this.now() >= sentAt + this.times.stopAfterMs) return;
    if (this.expiredFlag) this.o.log.info('control plane heard this runner again: lease renewed');
    this.expiredFlag = false;
    this.arm();
    this.renewed();
  }

  /**
   * Fires the expiry now if its time has come (also when the process was frozen and its timers
   * are late). Call before acting on any event. Returns true while expired.
   */
  check(): boolean {
    if (this.closed || this.expiredFlag || this.confirmedAt === null || !this.times) return this.expiredFlag;
    const now = this.now();
    const silentMs = now - this.confirmedAt;
    if (silentMs < this.times.stopAfterMs) return false;
    this.expiredFlag = true;
    this.clearTimer();
    const grace = Math.max(0, Math.min(this.times.killGraceMs, this.times.timeoutMs - this.times.marginMs - silentMs));
    this.o.log.warn('control plane has not confirmed hearing this runner: stopping its jobs before the server gives them to another runner', {
      silentMs: Math.round(silentMs),
      heartbeatTimeoutMs: this.timeoutMs,
      killGraceMs: Math.round(grace),
    });
    this.o.onExpire(grace, silentMs, this.times);
    return true;
  }

  /**
   * Ms until the lease runs out and the jobs are stopped (0 when due now); null when it is not
   * armed (no confirmation yet, expired, closed).
   */
  msUntilStop(): number | null {
    if (this.closed || this.expiredFlag || this.confirmedAt === null || !this.times) return null;
    return Math.max(0, this.confirmedAt + this.times.stopAfterMs - this.now());
  }

  /** Stops the timer for good. */
  close(): void {
    this.closed = true;
    this.clearTimer();
  }

  private arm(): void {
    this.clearTimer();
    if (this.closed || this.expiredFlag || this.confirmedAt === null || !this.times) return;
    const left = this.confirmedAt + this.times.stopAfterMs - this.now();
    this.timer = setTimeout(() => {
      this.timer = null;
      if (!this.check()) this.arm();
    }, Math.max(0, Math.min(left, POLL_MS)));
    this.timer.unref();
  }

  private renewed(): void {
    if (this.closed || this.confirmedAt === null || !this.times || !this.o.onRenew) return;
    this.o.onRenew(this.confirmedAt + this.times.stopAfterMs - this.now(), this.times);
  }

  private clearTimer(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }
}
