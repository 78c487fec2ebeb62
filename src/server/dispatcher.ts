import type { AgentDefinition, EventBody } from '../protocol/index.js';
import type { JobRow, NewJob, QueuedJobRef, Store } from '../store/types.js';
import type { DispatchState, OwnerLimits } from '../store/dispatch-types.js';
import { slotsUsed, workspaceKey, type HeldSlot } from '../core/capacity.js';
import type { Logger } from '../core/log.js';
import { hashToken, newToken } from '../core/tokens.js';
import type { AgentRegistry } from './agents.js';
import type { EventBus } from './event-bus.js';
import type { RunnerConnection, RunnerHub } from './hub.js';
import { recordStatus } from './status-events.js';
import type { EffortSettings } from './effort-cache.js';
import { assignPlanned, limitsOf, sendAssignment, type OpenRunner, type PassState, type Planned } from './dispatch-assign.js';
import { takeTaskSlot } from './tasks/slot-holds.js';
import { bestRunner, FIRST_PAGE, openRunners, reserveFor, runnerSlots } from './dispatch-match.js';
import { placeNewJob, type CreatedJob } from './dispatch-new-job.js';
import { WaitNotes } from './dispatch-notes.js';
import { placeNow } from './dispatch-place-now.js';

/** Most queued jobs read per dispatch pass (a full read with runners still free schedules another pass). */
const DISPATCH_BATCH = 1000;
/** Most queued jobs one pass looks at (in pages of up to DISPATCH_BATCH). */
const MAX_SCAN = 20_000;
/** The unmatched-job note runs at most this often, ms. */
const NOTE_EVERY_MS = 1000;

/**
 * Why a dispatch pass is asked for ({@link Dispatcher.kick}):
 * - `work`: jobs may have become queued (created, requeued, resumed, created through another
 *   replica: the periodic pass), so a pass always runs;
 * - `capacity`: only runner slots may have freed up (a job ended, a runner connected or got more
 *   slots). When the last pass left the queue empty — it claimed every queued job it read, and no
 *   `work` kick came since it began reading — such a pass would read an empty queue: it is
 *   skipped (issue 5: a finishing job's pass took a round trip and the CPU beside the next job's
 *   `POST /api/jobs`). Jobs created through another replica meanwhile are found by the periodic pass.
 */
export type KickReason = 'work' | 'capacity';

/** Outcome of {@link Dispatcher.placeNow}. */
export type PlaceResult =
  | { ok: true; job: JobRow; runnerId: number; runnerName: string }
  | { ok: false; code: 'not_found' | 'not_queued' | 'no_runner' | 'not_connected' | 'on_hold' | 'over_capacity'; message: string };

/** What the dispatcher needs. `intervalMs`: the periodic pass (jobs created by other replicas), default 1000. */
export interface DispatcherOptions {
  store: Store;
  hub: RunnerHub;
  agents: AgentRegistry;
  bus: EventBus;
  /** The account's effort settings (cached: effort-cache.ts). */
  effort: EffortSettings;
  log: Logger;
  now: () => number;
  intervalMs?: number;
}

/**
 * Hands queued jobs to runners connected to this server. A pass: read the head of the queue
 * (priority, then oldest first) with the runners on hold; give each job to the ready, not held,
 * matching runner with the most free slots (capacity − active jobs); claim a page's matches in
 * one batch (`store.claimJobsById`: fresh `flj_` job tokens, only their hashes stored, and the
 * `assigned` status events in the same transaction; dispatch-assign.ts) and send the
 * `job.assign` frames; a failed send puts the job back in the queue. Then, for queued jobs that
 * no registered runner's labels match, leave one `status` event "no runner matches ..., waiting"
 * (and the other reasons of dispatch-notes.ts), in a round of notes the pass starts but does not wait for.
 * Passes never overlap: a {@link kick} during a pass schedules exactly one more pass; kicks of one
 * event-loop turn share one pass.
 */
export class Dispatcher {
  private running: Promise<void> | null = null;
  /** A kick came during the running pass (the strongest reason): one more pass follows, unless only `capacity` and the pass drained the queue. */
  private again: KickReason | null = null;
  /** A pass is scheduled for the next turn of the event loop and has not started: kicks now need nothing more. */
  private starting = false;
  /** Passes in a row that ended with claims not taking (a re-pass follows at most 3 times). */
  private lostPasses = 0;
  private timer: NodeJS.Timeout | null = null;
  private stopped = false;
  /** Why queued jobs wait, noted in their status (dispatch-notes.ts). */
  private readonly noted: WaitNotes;
  /** When the notes last ran (epoch ms). */
  private notedAt = 0;
  /** The round of notes in progress (started by a pass, not awaited by it), or null. */
  private noting: Promise<void> | null = null;
  /** `work` kicks so far: a pass that began reading at another count cannot vouch for an empty queue. */
  private workKicks = 0;
  /** The last pass claimed every queued job it read and no `work` kick came since: `capacity` kicks need no pass. */
  private queueDrained = false;

  constructor(private readonly o: DispatcherOptions) {
    this.noted = new WaitNotes(o);
  }

  /** Starts the periodic pass. */
  start(): void {
    const every = this.o.intervalMs ?? 1000;
    this.timer = setInterval(() => this.kick(), every);
    this.timer.unref();
  }

  /**
   * Requests a pass now (coalesced with one in progress). The pass starts on the next turn of
   * the event loop (setImmediate): kicks from the same turn — several runners' completions read
   * from their sockets at once — are served by one pass, which claims for all of them in one batch.
   * A `capacity` kick while the queue is known drained does nothing ({@link KickReason}).
   */
  kick(reason: KickReason = 'work'): void {
    if (this.stopped) return;
    if (reason === 'work') {
      this.workKicks++;
      this.queueDrained = false;
    } else if (this.queueDrained) return;
    if (this.running) {
      if (!this.starting && this.again !== 'work') this.again = reason;
      return;
    }
    this.starting = true;
    this.run(
      new Promise<void>((resolve) => setImmediate(resolve)).then(() => {
        this.starting = false;
        return undefined;
      }),
    );
  }

  /**
   * Creates root job `j` (`POST /api/jobs`: `queued` its first event, `agent` its loaded
   * definition) and dispatches it at once; its events are published on the bus.
   * - Idle here, with runners connected: placeNewJob (dispatch-new-job.ts) reads the dispatch
   *   state first; when no older job is queued and a runner here fits, the job is stored already
   *   assigned to it and sent (one store write and commit less between the POST and the runner's
   *   `job.assign`, issue 5); otherwise it is stored queued and a pass over that read follows.
   * - Otherwise (a pass is running, or no runner is here): stored queued, then a `work` kick.
   * @returns the stored job and its events. @throws Error from the store (nothing stored).
   */
  createJob(j: NewJob, queued: EventBody, agent: AgentDefinition): Promise<CreatedJob> {
    const conns = this.o.hub.connections();
    if (!this.stopped && !this.running && conns.length > 0) {
      this.workKicks++;
      this.queueDrained = false;
      this.again = null; // from here on, a kick may be news to the read placeNewJob makes now
      const kicks = this.workKicks;
      const deps = { ...this.o, anyNoneAgent: () => this.o.agents.list().some((a) => a.holds === 'none'), applyOwnerLimits: (l: readonly OwnerLimits[]) => this.o.hub.applyOwnerLimits(l) };
      const { created, after } = placeNewJob(deps, conns, j, queued, agent);
      this.run(
        after.then(
          (next) => {
            // Sent, and it was the only job queued: nothing is queued here unless a `work` kick came since.
            if (next === 'drained' && this.workKicks === kicks) this.queueDrained = true;
            return next === 'drained' ? null : next === 'pass' ? undefined : next;
          },
          () => undefined,
        ),
      );
      return created;
    }
    const creating = this.o.store.createRootJobWithEvent(j, queued).then((c) => {
      this.o.bus.publish(c.job.id, [c.event]);
      this.kick('work');
      return c;
    });
    return creating;
  }

  /**
   * Runs passes while `running`: the first on what `first` gives — a state (its first read, done
   * already), undefined (it reads for itself), or null (no first pass: only those kicks ask for
   * meanwhile) — then one more while a kick asks for it.
   */
  private run(first: Promise<DispatchState | null | undefined>): void {
    this.running = (async () => {
      let pre = await first;
      if (this.stopped || (pre === null && !this.wantsAnother())) return;
      do {
        // A pass that reads now serves every kick so far; one on a state read earlier does not
        // (a job queued after that read asked for another pass: it must get one).
        if (pre === undefined || pre === null) this.again = null;
        try {
          await this.pass(pre ?? undefined);
        } catch (err) {
          this.o.log.error('dispatch pass failed', { err: String(err) });
        }
        pre = undefined;
      } while (this.wantsAnother());
    })().finally(() => {
      this.running = null;
      this.starting = false;
    });
  }

  /** A kick came during the pass; a `capacity` one needs no other pass once the queue was drained. */
  private wantsAnother(): boolean {
    return this.again !== null && !(this.again === 'capacity' && this.queueDrained) && !this.stopped;
  }

  /** Resolves when no pass and no round of notes is running (tests; shutdown). */
  async idle(): Promise<void> {
    while (this.running || this.noting) await (this.running ?? this.noting);
  }

  /** Stops the timer and waits for the current pass (and round of notes). */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    await this.idle();
  }

  /** One pass; `pre`: its first read, done already (a new job's, dispatch-new-job.ts). */
  private async pass(pre?: DispatchState): Promise<void> {
    const { store, hub, now } = this.o;
    const conns = hub.connections();
    // Job-centric: read the queue in pages, match in memory, then claim a page's matches in one
    // batch (store.claimJobsById: the claims and their `assigned` events in one transaction).
    // Round trips per pass: 1 for the live assignments, kept task slots and the first page with
    // the holds (one snapshot), then 1 claim per page that assigns something (one statement on
    // PostgreSQL; the effort settings are cached, effort-cache.ts), and 1 read per further page
    // while runners here have room.
    const workKicksAtStart = this.workKicks;
    if (conns.length > 0) {
      // The runners' slots and the head of the queue (with the holds) are read at once (one
      // statement on PostgreSQL, store/dispatch-state.ts): two round trips less before a new
      // job's claim (issue 5, POST → job.assign). Reading the slots before the queue bought
      // nothing: only this server's passes (never overlapping) and placeNow assign to its
      // runners, and every claim is conditional on the job being queued. The free slots are not
      // known yet, so the first page is a small fixed one; a full page with runners still free
      // reads on (below).
      const firstHead = pre ?? (await store.listDispatchState(FIRST_PAGE, now()));
      hub.applyOwnerLimits(firstHead.ownerLimits); // capacity set through another replica
      const slots = runnerSlots(conns, firstHead, this.o.agents.list().some((a) => a.holds === 'none'));
      const { kept, anyNone } = slots;
      const noneJobs = slots.free === 0 && anyNone;
      // Later pages: as much of the queue as the slots still free can plausibly take (labels
      // may not match the first ones): 8 per free slot, 32 to DISPATCH_BATCH. Counted when the
      // page is read, not at the start of the pass: with 50 free runners the first page took 32
      // jobs and the second read 400 rows for the other 18 (bench/dispatch).
      const laterPageLimit = (runners: readonly OpenRunner[]) => Math.min(DISPATCH_BATCH, Math.max(32, runners.reduce((n, x) => n + Math.max(0, x.free), 0) * 8));
      // Page through the queue (keyset, never the same page twice) while runners are free:
      // jobs no free runner matches must not hide the ones behind them. At most
      // MAX_SCAN jobs per pass; the periodic pass goes on from the head later.
      let after: { priority: number; id: number } | undefined;
      let open: OpenRunner[] | null = slots.free > 0 || noneJobs ? null : [];
      const pass: PassState = { refreshed: false, account: null, lost: 0, sent: 0 };
      /** The last page read was not full: every queued job was read (`scanned` of them). */
      let readAll = false;
      let scanned = 0;
      // Paging goes on while some runner has a free slot (jobs holding nothing also fit a full
      // runner, but only within pages read anyway).
      for (; (open === null || open.some((x) => x.free > 0)) && scanned < MAX_SCAN && !this.stopped; ) {
        let queue: QueuedJobRef[];
        let pageLimit: number;
        if (open === null) {
          // Holds are read with the first page (one snapshot on PostgreSQL, after it on SQLite):
          // a hold set before a job was created is then always seen when that job is matched (a
          // pass that started before the hold cannot hand the new job to the held runner).
          queue = firstHead.queue;
          pageLimit = FIRST_PAGE;
          open = openRunners(slots, firstHead.heldRunnerIds, now());
        } else {
          pageLimit = laterPageLimit(open);
          queue = await store.listQueuedForDispatch(pageLimit, after);
        }
        scanned += queue.length;
        const plan: Planned[] = [];
        for (const q of queue) {
          if (this.stopped || open.length === 0) break;
          const holds = this.o.agents.get(q.agent)?.holds ?? 'workspace';
          const workspace = workspaceKey({ id: q.id, workspaceJobId: q.workspaceJobId });
          const best = bestRunner(q, holds, workspace, open, kept);
          if (best < 0) {
            // A whole-runner job waits for a runner with nothing on it: keep the matching one
            // closest to empty from younger jobs (this pass; every pass chooses the same), so it
            // drains instead of being refilled for ever by small jobs (a fresh user's job 15).
            if (holds === 'runner') {
              const r = reserveFor(q, open);
              if (r >= 0) open.splice(r, 1);
            }
            continue;
          }
          const pick = open[best]!;
          const agent = await this.agentFor(q, pass);
          if (!agent) {
            // Not loaded here: claimed alone and failed by deliver (the runner stays free).
            const token = newToken('flj');
            const job = await store.claimJobById(q.id, { id: pick.c.runnerId, labels: pick.c.labels }, hashToken(token), now(), holds);
            if (job) await this.deliver(pick.c, job, token, false);
            continue;
          }
          // Planned: the slot is taken now (so later jobs of the page see it) and given back
          // if the claim does not take.
          const slot: HeldSlot = { holds, workspace };
          const keptTaken = kept.get(pick.c.runnerId)?.find((k) => k.workspace === workspace) ?? null;
          takeTaskSlot(kept.get(pick.c.runnerId), workspace);
          pick.active.push(slot);
          pick.free = pick.c.capacity - slotsUsed(pick.active, limitsOf(pick.c));
          open.splice(best, 1);
          // Back of the line, so equal runners take turns (a whole-runner job takes it out; so
          // does the last free slot, unless jobs holding nothing may still fit: every other job
          // would only be checked against it in vain, for the rest of the page).
          if (holds !== 'runner' && (pick.free > 0 || anyNone)) open.push(pick);
          plan.push({ q, pick, agent, holds, slot, keptTaken, token: newToken('flj') });
        }
        if (plan.length) await assignPlanned(this.o, plan, open, kept, pass, this.noted);
        if (queue.length < pageLimit) {
          readAll = true;
          break;
        }
        const last = queue[queue.length - 1]!;
        after = { priority: last.priority, id: last.id };
      }
      // Claims that did not take (another replica, a cancel, a row locked at that instant) left
      // their runners free: one more pass, a few times in a row at most (a locked row is skipped).
      if (pass.lost > 0 && this.lostPasses++ < 3) this.again = 'work';
      else if (pass.lost === 0) this.lostPasses = 0;
      // Every queued job read was claimed and sent, and none can have been queued here since
      // the read began: the queue is empty as far as this server knows (KickReason).
      if (readAll && pass.sent === scanned && pass.lost === 0 && this.workKicks === workKicksAtStart) this.queueDrained = true;
    }
    // The notes on why queued jobs wait are advisory: at most once per NOTE_EVERY_MS, one round
    // at a time, and not awaited: their reads and their one write (conditional on each job
    // still being queued, so a note never follows an assignment made meanwhile) stay off the
    // dispatch pass; the next pass may start while they run.
    if (now() - this.notedAt >= NOTE_EVERY_MS && !this.noting && !this.stopped) {
      this.notedAt = now();
      this.noting = this.noted
        .run()
        .catch((err: unknown) => this.o.log.error('dispatch notes failed', { err: String(err) }))
        .finally(() => {
          this.noting = null;
        });
    }
  }

  /**
   * The definition queued job `q` runs (as {@link deliver} finds it: its version, else the
   * agent's current one); when that version is not loaded the registry is re-read, at most once
   * per pass (one installed through another replica a moment ago, issue 6). Undefined: unknown.
   */
  private async agentFor(q: QueuedJobRef, pass: PassState): Promise<AgentDefinition | undefined> {
    const agent = this.o.agents.forJob(q.agent, q.agentVersion);
    if ((agent && agent.version === q.agentVersion) || pass.refreshed) return agent;
    pass.refreshed = true;
    await this.o.agents.refresh();
    return this.o.agents.forJob(q.agent, q.agentVersion);
  }

  /**
   * Sends a claimed job to its runner: `assigned` status event + `job.assign`. A job whose
   * agent is not loaded here fails (`unknown`); a send that fails puts it back in the queue
   * (`unreachable`).
   */
  private async deliver(conn: RunnerConnection, job: JobRow, token: string, force: boolean): Promise<'sent' | 'unreachable' | 'failed'> {
    const { store, now } = this.o;
    this.noted.delete(job.id);
    // The version the job was created with (issue 6: installed agents keep their versions);
    // one installed through another replica a moment ago may need a re-read of the store.
    let agent = this.o.agents.forJob(job.agent, job.agentVersion);
    if (!agent || agent.version !== job.agentVersion) {
      await this.o.agents.refresh();
      agent = this.o.agents.forJob(job.agent, job.agentVersion);
    }
    if (!agent) {
      const t = now();
      const error = `agent ${job.agent} is not loaded on this server`;
      if (await store.transitionJob(job.id, job.attempt, ['assigned'], 'failed', t, { endReason: 'error', error })) {
        await recordStatus(store, this.o.bus, job.id, 'failed', error, t);
      }
      return 'failed';
    }
    const how = force ? ' (placed by jobs start --force)' : '';
    await recordStatus(store, this.o.bus, job.id, 'assigned', `assigned to runner ${conn.name}${how}`, now(), conn.runnerId);
    const account = await this.o.effort.get().catch((err: Error) => err);
    return (await sendAssignment(this.o, conn, agent, job, token, account, force)) ? 'sent' : 'unreachable';
  }

  /** `jobs start`: places queued job `jobId` now (dispatch-place-now.ts placeNow). */
  placeNow(jobId: number, o: { runnerId?: number; force: boolean }): Promise<PlaceResult> {
    return placeNow({ ...this.o, deliver: (c, job, token, force) => this.deliver(c, job, token, force) }, jobId, o);
  }
}
