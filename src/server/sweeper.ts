import type { OrphanedJob } from '../store/job-tree.js';
import type { JobRow, Store, SweptJob } from '../store/types.js';
import type { Logger } from '../core/log.js';
import type { EventBus } from './event-bus.js';
import { reportEndedJobs } from './status-events.js';
import { noteRunner } from './runner-history.js';
import { releaseExpiredReservations } from '../gateway/reservation-sweep.js';
import { RUNNER_NEVER_STARTED } from '../store/unstarted.js';

/** What the sweeper needs. Times in ms. */
export interface SweeperOptions {
  store: Store;
  bus: EventBus;
  log: Logger;
  now: () => number;
  /** A runner silent longer than this is offline and its active jobs are lost. */
  timeoutMs: number;
  /** How often to sweep. */
  intervalMs: number;
  /** When this server started (epoch ms); no runner is swept until `startedAt + startupGraceMs`. */
  startedAt: number;
  /**
   * How long after `startedAt` no runner is declared offline, ms; default `timeoutMs`. After a
   * restart with runners connected, the server gives them their reconnect window as well
   * (server.ts restartGraceMs): a runner's backoff may be longer than a short timeout.
   */
  startupGraceMs?: number;
  /**
   * Closes this server's runner sockets with no heartbeat since `cutoff` (epoch ms; hub
   * closeSilent, the store sweep's own criterion), called by each sweep before the store sweep:
   * a frozen runner's socket stays open, and without this its requeued jobs went straight back
   * to it.
   */
  closeSilent?: (cutoff: number) => void;
  /**
   * Closes runner `runnerId`'s socket on this server, if any (hub disconnect, code 4408): called
   * right after the store sweep for every runner whose jobs it lost or requeued, before anything
   * is reported or dispatched, so the dispatcher never gives such a job back to that runner.
   */
  disconnect?: (runnerId: number, reason: string) => void;
  /** Called after jobs were marked lost. */
  onLost?: (jobs: JobRow[]) => void;
  /**
   * Called with jobs whose parent has ended while they had not (store.listOrphanedJobs, at most
   * 100 per sweep); the server cancels them (cancel-tree.ts). No start-up grace: they do not
   * depend on any runner's liveness.
   */
  onOrphans?: (jobs: OrphanedJob[]) => Promise<void>;
  /**
   * Called each sweep, after the expired reservations: the check of trees waiting for budget
   * room (budget-sweep.ts budgetWaitSweep, which runs at most every 10 s). No start-up grace.
   */
  onBudgetWait?: () => Promise<void>;
}

/** Timer lateness below this is jitter, not a stall of the event loop, ms. */
const STALL_MIN_MS = 50;

/**
 * Liveness: every `intervalMs`, runners whose last heartbeat is older than `timeoutMs` go
 * offline and their running jobs become `lost` (store.sweepStaleRunners), each with
 * a `status` event "runner X silent for Ns" — or, with retries left (agent `retries`), go back
 * to the queue with "...; back in the queue for a retry on any matching runner (N retries left)";
 * their assigned jobs, never started, go back to the queue with no retry used (a job that went
 * back that way 3 times already fails instead: "runner X silent for Ns; assigned 4 times and never started ...", endReason
 * `runner_never_started`, store/unstarted.ts). A silent runner's
 * socket on this server (no heartbeat within the timeout, whatever else it sent) is closed
 * first, and every runner the store swept is disconnected before its jobs are reported, so it
 * gets no job until it connects again. Time this process was stalled (the timer ran late:
 * {@link Sweeper.noteStall}) does not count toward a runner's silence. The first
 * sweep waits until the server has been up for `startupGraceMs`, so runners get time to
 * reconnect after a restart. Each sweep also gives
 * back expired budget reservations, checks the trees waiting for budget room (`onBudgetWait`)
 * and hands jobs whose parent ended to `onOrphans`.
 */
export class Sweeper {
  private timer: NodeJS.Timeout | null = null;
  private current: Promise<JobRow[]> | null = null;
  /** performance.now() of the timer's last call, ms. */
  private lastFire: number | null = null;
  /** Event-loop stalls the timer saw: when each ended (performance.now(), ms) and how long it was, ms. */
  private stalls: Array<{ at: number; ms: number }> = [];

  constructor(private readonly o: SweeperOptions) {}

  start(): void {
    this.timer = setInterval(() => {
      const stalled = this.noteStall();
      if (this.current) return;
      this.current = this.sweepOnce(stalled)
        .catch((err: unknown) => {
          this.o.log.error('liveness sweep failed', { err: String(err) });
          return [];
        })
        .finally(() => {
          this.current = null;
        });
    }, this.o.intervalMs);
    this.timer.unref();
  }

  /**
   * Records how late the timer ran (the event loop was blocked: a long synchronous SQLite read,
   * a GC pause, a starved CPU) and returns the stalls of the last two timeouts, summed, ms.
   * Node runs due timers before it reads sockets, so after a stall the sweep runs while the
   * heartbeats that came meanwhile wait unread: without this, a stall longer than the timeout
   * took every runner for silent. Lateness under {@link STALL_MIN_MS} (or half an interval) is
   * timer jitter, not a stall. Monotonic clock: the sweep's `now` may be a test's fixed clock.
   */
  private noteStall(): number {
    const mono = performance.now();
    const late = this.lastFire === null ? 0 : mono - this.lastFire - this.o.intervalMs;
    this.lastFire = mono;
    if (late > Math.max(STALL_MIN_MS, this.o.intervalMs / 2)) this.stalls.push({ at: mono, ms: late });
    this.stalls = this.stalls.filter((s) => s.at > mono - 2 * this.o.timeoutMs);
    return this.stalls.reduce((sum, s) => sum + s.ms, 0);
  }

  /** Stops the timer and waits for a sweep in progress. */
  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    if (this.current) await this.current;
  }

  /**
   * One sweep now; returns the jobs it marked lost or requeued (empty during the start-up grace).
   * `stalledMs`: how long this process could not read its sockets lately (ms, the timer's
   * {@link noteStall}); a runner is silent once it has not been heard for `timeoutMs` of time the
   * server was listening, so the cutoff moves back by that much.
   */
  async sweepOnce(stalledMs = 0): Promise<SweptJob[]> {
    const { store, now, timeoutMs } = this.o;
    const t = now();
    // Budget reservations of calls whose gateway died mid-call (issue 3); no start-up grace.
    await releaseExpiredReservations(store, t, this.o.log);
    // Room held for resumed jobs that ended some way no hook saw, and jobs it would resume (issue 3).
    await this.o.onBudgetWait?.();
    if (this.o.onOrphans) {
      const orphans = await store.listOrphanedJobs(100);
      if (orphans.length) await this.o.onOrphans(orphans);
    }
    if (t - this.o.startedAt < (this.o.startupGraceMs ?? timeoutMs)) return [];
    // whole ms: the store takes an integer cutoff (a fractional stall failed every sweep for two timeouts: a fresh tester)
    const cutoff = t - timeoutMs - Math.ceil(stalledMs);
    this.o.closeSilent?.(cutoff);
    const lost = await store.sweepStaleRunners(cutoff, t);
    // Belt and braces after closeSilent: whatever runner the store swept is out of dispatch here
    // before its requeued jobs are announced (a dispatch pass picks only ready, live connections).
    for (const runnerId of new Set(lost.map((j) => j.runnerId))) if (runnerId !== null) this.o.disconnect?.(runnerId, 'no heartbeat within the timeout');
    const names = new Map<number, { name: string; last: number | null; revoked: boolean }>();
    for (const job of lost) {
      if (job.runnerId !== null && !names.has(job.runnerId)) {
        const r = await store.getRunner(job.runnerId);
        names.set(job.runnerId, { name: r?.name ?? `#${job.runnerId}`, last: r?.lastHeartbeatAt ?? null, revoked: (r?.revokedAt ?? null) !== null });
      }
    }
    const silentFor = (job: JobRow) => {
      const info = job.runnerId !== null ? names.get(job.runnerId) : undefined;
      const silent = info?.last != null ? t - info.last : timeoutMs;
      // a revoked runner's jobs end here too, once its lease has run out: say it was revoked (it read "silent for 22s")
      if (info?.revoked) return `runner ${info.name} was revoked; its lease ran out ${Math.round(silent / 1000)}s after its last heartbeat`;
      return `${info ? `runner ${info.name}` : 'its runner'} silent for ${Math.round(silent / 1000)}s`;
    };
    // A job that ran out of unstarted requeues (store/unstarted.ts) fails: its status says why.
    const neverStarted = (job: JobRow) => job.status === 'failed' && job.endReason === RUNNER_NEVER_STARTED;
    const cause = (job: JobRow) => (neverStarted(job) ? `${silentFor(job)}; ${job.error ?? RUNNER_NEVER_STARTED}` : silentFor(job));
    const what = (job: SweptJob) => (neverStarted(job) ? 'job never started, failed' : job.unstarted ? 'job never started, requeued' : job.status === 'queued' ? 'job lost, retrying' : 'job lost');
    for (const job of lost) this.o.log.warn(what(job), { jobId: job.id, runnerId: job.runnerId, message: cause(job) });
    await reportEndedJobs(store, this.o.bus, lost, cause, t);
    // The runner's history (its page's activity): one line per runner that left jobs behind.
    for (const runnerId of names.keys()) {
      const its = lost.filter((j) => j.runnerId === runnerId);
      await noteRunner(this.o, runnerId, 'offline', `went offline: ${silentFor(its[0]!)}; ${its.length} job${its.length === 1 ? '' : 's'} lost or requeued`);
    }
    for (const job of lost) this.o.bus.publish(job.id);
    if (lost.length) this.o.onLost?.(lost);
    return lost;
  }
}
