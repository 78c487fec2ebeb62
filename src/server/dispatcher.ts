import type { JobAssignment } from '../protocol/index.js';
import type { Store } from '../store/types.js';
import type { Logger } from '../core/log.js';
import { hashToken, newToken } from '../core/tokens.js';
import { selectorMatches } from '../core/labels.js';
import type { AgentRegistry } from './agents.js';
import type { EventBus } from './event-bus.js';
import type { RunnerHub } from './hub.js';
import { recordStatus } from './status-events.js';
import { formatLabels } from './views.js';

/** What the dispatcher needs. `intervalMs`: the periodic pass (jobs created by other replicas), default 1000. */
export interface DispatcherOptions {
  store: Store;
  hub: RunnerHub;
  agents: AgentRegistry;
  bus: EventBus;
  log: Logger;
  now: () => number;
  intervalMs?: number;
}

/**
 * Hands queued jobs to runners connected to this server. A pass: for each ready runner with
 * free capacity (capacity − active jobs), claim jobs (`store.claimJob`, fresh `flj_` job token,
 * only its hash stored), leave an `assigned` status event and send `job.assign`; a failed send
 * puts the job back in the queue. Then, for queued jobs that no registered runner's labels
 * match, leave one `status` event "no runner matches ..., waiting".
 * Passes never overlap: a {@link kick} during a pass schedules exactly one more pass.
 */
export class Dispatcher {
  private running: Promise<void> | null = null;
  private again = false;
  private timer: NodeJS.Timeout | null = null;
  private stopped = false;
  /** Queued jobs already told that no runner matches (so the note is left once). */
  private readonly noted = new Set<number>();

  constructor(private readonly o: DispatcherOptions) {}

  /** Starts the periodic pass. */
  start(): void {
    const every = this.o.intervalMs ?? 1000;
    this.timer = setInterval(() => this.kick(), every);
    this.timer.unref();
  }

  /** Requests a pass now (coalesced with one in progress). */
  kick(): void {
    if (this.stopped) return;
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = (async () => {
      do {
        this.again = false;
        try {
          await this.pass();
        } catch (err) {
          this.o.log.error('dispatch pass failed', { err: String(err) });
        }
      } while (this.again && !this.stopped);
    })().finally(() => {
      this.running = null;
    });
  }

  /** Resolves when no pass is running (tests; shutdown). */
  async idle(): Promise<void> {
    while (this.running) await this.running;
  }

  /** Stops the timer and waits for the current pass. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    await this.idle();
  }

  private async pass(): Promise<void> {
    const { store, hub, now } = this.o;
    for (const conn of hub.connections()) {
      if (this.stopped) return;
      if (conn.holdUntil > now()) continue;
      const active = await store.listActiveJobsForRunner(conn.runnerId);
      let free = conn.capacity - active.length;
      while (free > 0 && !this.stopped) {
        const token = newToken('flj');
        const job = await store.claimJob({ id: conn.runnerId, labels: conn.labels }, hashToken(token), now());
        if (!job) break;
        this.noted.delete(job.id);
        const agent = this.o.agents.get(job.agent);
        if (!agent) {
          const t = now();
          const error = `agent ${job.agent} is not loaded on this server`;
          if (await store.transitionJob(job.id, job.attempt, ['assigned'], 'failed', t, { endReason: 'error', error })) {
            await recordStatus(store, this.o.bus, job.id, 'failed', error, t);
          }
          continue;
        }
        await recordStatus(store, this.o.bus, job.id, 'assigned', `assigned to runner ${conn.name}`, now(), conn.runnerId);
        const assignment: JobAssignment = {
          jobId: job.id,
          rootId: job.rootId,
          attempt: job.attempt,
          agent,
          input: job.input,
          token,
          resumeSessionId: job.resumeSessionId,
        };
        if (!(await conn.send({ type: 'job.assign', assignment }))) {
          const t = now();
          if (await store.requeueJob(job.id, job.attempt, t)) {
            await recordStatus(store, this.o.bus, job.id, 'queued', `could not reach runner ${conn.name}; back in the queue`, t, conn.runnerId);
          }
          break;
        }
        this.o.log.info('job assigned', { jobId: job.id, attempt: job.attempt, runnerId: conn.runnerId });
        free--;
      }
    }
    await this.noteUnmatched();
  }

  private async noteUnmatched(): Promise<void> {
    const { store, now } = this.o;
    const queued = await store.listJobs({ status: 'queued', limit: 200 });
    const ids = new Set(queued.map((j) => j.id));
    for (const id of [...this.noted]) if (!ids.has(id)) this.noted.delete(id);
    const todo = queued.filter((j) => !this.noted.has(j.id));
    if (todo.length === 0) return;
    const runners = await store.listRunners();
    for (const job of todo) {
      if (runners.some((r) => selectorMatches(job.selector, r.labels))) continue;
      this.noted.add(job.id);
      const want = formatLabels(job.selector);
      const message = runners.length === 0 ? 'no runner registered yet, waiting' : `no runner matches ${want || 'this job'}, waiting`;
      await recordStatus(store, this.o.bus, job.id, 'queued', message, now());
    }
  }
}
