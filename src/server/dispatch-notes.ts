import type { HeldSlot } from '../core/capacity.js';
import { workspaceKey } from '../core/capacity.js';
import { selectorMatches } from '../core/labels.js';
import type { Logger } from '../core/log.js';
import type { Store } from '../store/types.js';
import type { AgentRegistry } from './agents.js';
import { limitsOf } from './dispatch-assign.js';
import { groupByRunner } from './dispatch-match.js';
import type { EventBus } from './event-bus.js';
import type { RunnerHub } from './hub.js';
import { keptSlotReason } from './tasks/slot-wait.js';
import { formatLabels } from './views.js';

/** Most queued jobs one round of notes looks at (the newest: store listJobs order). */
const NOTE_BATCH = 200;

/** Why a queued job waits, as last told in its status (the kinds a new note replaces). */
type NoteKind = 'unmatched' | 'offline' | 'held' | 'kept' | 'busy';

/** Runner names for a note: at most 5, then how many more. */
function names(rs: ReadonlyArray<{ name: string }>): string {
  return rs.length <= 5 ? rs.map((r) => r.name).join(', ') : `${rs.slice(0, 5).map((r) => r.name).join(', ')} and ${rs.length - 5} more`;
}

/** What {@link WaitNotes} needs. */
export interface WaitNotesDeps {
  store: Store;
  hub: RunnerHub;
  agents: AgentRegistry;
  bus: EventBus;
  log: Logger;
  now: () => number;
}

/**
 * The dispatcher's advisory notes on queued jobs (issue 5: "a job no runner could ever match says
 * so in its status, instead of waiting forever"): a `status` event `queued` with why the job waits,
 * which `GET /api/jobs/:id` shows as `waiting`. One note per reason: a job is told again only when
 * its reason changes, so the last note is never stale —
 * - `unmatched`: no registered runner (revoked ones excluded) has its labels (and pin);
 * - `held`: runners that match are connected, and every one of them is on hold (named, with
 *   the hold's end; told again when a hold's end moves);
 * - `kept`: it would fit but for slots kept by idle tasks (tasks/slot-wait.ts);
 * - `busy`: runners match and none of the above, after an earlier note said otherwise (a runner
 *   with the labels registered, a hold ended): waiting for one of them (named) to connect or be
 *   free. Without an earlier note nothing is said: the creation's "waiting for a runner" holds.
 * A round's notes are written in ONE store call (store appendEventsIfQueued: one statement on
 * PostgreSQL), each only if its job is still queued then: the reads are from an earlier
 * snapshot, and an advisory "waiting" note must not follow an assignment or a cancel made since
 * (it would read as the job's last status). A queue of jobs that never had one (the usual case)
 * costs the reads only. Every `busy` note of a round is written: when runners register after a
 * queue was told "no runner registered yet", all 200 change at once, which as one-at-a-time
 * notes (6 round trips each) halved that queue's dispatch rate on PostgreSQL and was capped at
 * 20 a round; as one statement of 200 rows, off the dispatch pass (dispatcher.ts), it is cheap.
 */
export class WaitNotes {
  /** Queued jobs told why they wait, with that reason and the message it was told in. */
  private readonly told = new Map<number, { kind: NoteKind; message: string }>();

  constructor(private readonly o: WaitNotesDeps) {}

  /** Job `id` left the queue (assigned): forget its note. */
  delete(id: number): void {
    this.told.delete(id);
  }

  /**
   * Looks at the newest NOTE_BATCH queued jobs and notes those whose reason to wait changed, in
   * one store write; the stored notes are published on the bus. A job whose note was not stored
   * (no longer queued, or its row held by another writer at that instant) is not taken as told:
   * it is looked at again next round. @throws Error from the store.
   */
  async run(): Promise<void> {
    const { store, now } = this.o;
    const queued = await store.listJobs({ status: 'queued', limit: NOTE_BATCH });
    const ids = new Set(queued.map((j) => j.id));
    for (const id of [...this.told.keys()]) if (!ids.has(id)) this.told.delete(id);
    if (queued.length === 0) return;
    const t = now();
    // A revoked runner can never connect again: its labels match nothing.
    const all = await store.listRunners();
    const runners = all.filter((r) => r.revokedAt === null);
    const slots = await store.listTaskSlots(t); // idle tasks' kept slots: say so when they are why a job waits (FX2)
    const conns = slots.length ? this.o.hub.connections() : [];
    const byRunner = conns.length ? groupByRunner(await store.listActiveAssignments()) : new Map<number, HeldSlot[]>();
    const notes: Array<{ jobId: number; kind: NoteKind; message: string }> = [];
    for (const job of queued) {
      const want = formatLabels(job.selector) || 'this job';
      const matching = runners.filter((r) => selectorMatches(job.selector, r.labels) && (job.pinnedRunnerId === null || job.pinnedRunnerId === r.id));
      let kind: NoteKind;
      let message: string;
      if (matching.length === 0) {
        kind = 'unmatched';
        const pin = job.pinnedRunnerId ?? null;
        const pinned = pin !== null ? all.find((r) => r.id === pin) : undefined;
        message =
          pin !== null && (!pinned || pinned.revokedAt !== null)
            ? `it resumes a session kept on runner ${pinned ? `${pinned.name} (${pinned.id})` : pin}, which was revoked: it can never run; cancel it and start a new run`
            : pin !== null
              ? `it resumes a session kept on runner ${pinned!.name} (${pinned!.id}), whose labels do not match ${want}, waiting`
              : runners.length === 0
                ? 'no runner registered yet, waiting'
                : `no runner matches ${want}, waiting`;
      } else if (job.pinnedRunnerId !== null && !matching.some((r) => r.connected && !r.offline)) {
        // a resume waits for the one runner that keeps its session (tester finding: it said only "resuming")
        kind = 'offline';
        const pinned = matching[0]!;
        message = `it resumes a session kept on runner ${pinned.name} (${pinned.id}), which is offline: waiting for it to reconnect`;
      } else if (matching.some((r) => r.connected && !r.offline) && matching.every((r) => !(r.connected && !r.offline) || (r.hold !== null && r.hold.until > t))) {
        kind = 'held';
        const held = matching.filter((r) => r.connected && !r.offline);
        message = `every connected runner that matches ${want} is on hold (${names(held.map((r) => ({ name: `${r.name} until ${new Date(r.hold!.until).toISOString()}` })))}), waiting`;
      } else {
        const views = conns
          .filter((c) => matching.some((r) => r.id === c.runnerId))
          .map((c) => ({ runnerId: c.runnerId, name: c.name, limits: limitsOf(c), active: byRunner.get(c.runnerId) ?? [] }));
        const kept = keptSlotReason(this.o.agents.get(job.agent)?.holds ?? 'workspace', workspaceKey({ id: job.id, workspaceJobId: job.workspaceJobId }), views, slots);
        if (kept) {
          kind = 'kept';
          message = kept;
        } else {
          // Nothing was said, or it still holds: the creation's "waiting for a runner" is right.
          const before = this.told.get(job.id)?.kind;
          if (before === undefined || before === 'busy') continue;
          kind = 'busy';
          message = `waiting for a runner that matches ${want} (${names(matching)})`;
        }
      }
      // Told again when the reason changes, or when a hold's end moved (extended, or a new hold):
      // the note names it, and a note with an old end is stale.
      const last = this.told.get(job.id);
      if (last?.kind === kind && (kind !== 'held' || last.message === message)) continue;
      notes.push({ jobId: job.id, kind, message });
    }
    if (notes.length === 0) return;
    const stored = await store.appendEventsIfQueued(
      notes.map((n) => ({ jobId: n.jobId, event: { type: 'status', data: { status: 'queued', message: n.message } } })),
      now(),
    );
    const by = new Map(notes.map((n) => [n.jobId, n]));
    for (const ev of stored) {
      const n = by.get(ev.jobId)!;
      this.told.set(n.jobId, { kind: n.kind, message: n.message });
      this.o.bus.publish(ev.jobId, [ev]);
    }
  }
}
