import type { JobHolds } from '../protocol/index.js';
import type { ActiveAssignment, QueuedJobRef } from '../store/types.js';
import type { DispatchState } from '../store/dispatch-types.js';
import { whyNotFits, type HeldSlot } from '../core/capacity.js';
import { selectorMatches } from '../core/labels.js';
import { openRunner, type OpenRunner } from './dispatch-assign.js';
import type { RunnerConnection } from './hub.js';
import { groupTaskSlots, withTaskSlots } from './tasks/slot-holds.js';

// Matching queued jobs to runners from a dispatch pass's first read (store/dispatch-state.ts):
// used by every pass (dispatcher.ts) and by a new job placed with its creation (dispatch-new-job.ts).

/**
 * Queued jobs in the first page of a pass, read before the free slots are known (beside them);
 * a full page with runners still free reads the next one.
 */
export const FIRST_PAGE = 32;

/** The runners of a pass, from its first read: each with its active slots, the kept task slots, and what is free. */
export interface RunnerSlots {
  /** Connected runners not held whole by a job ('runner'), with their active slots (copied). */
  candidates: OpenRunner[];
  /** Runner slots kept by idle tasks (issue 7), by runner id. */
  kept: Map<number, HeldSlot[]>;
  /** Free parallel-job slots over all candidates. */
  free: number;
  /** Some agent's jobs hold nothing: they fit full runners too (core/capacity.ts whyNotFits). */
  anyNone: boolean;
}

/** {@link RunnerSlots} of `conns` (this server's ready runners) from `st`; `anyNoneAgent`: some loaded agent holds nothing. */
export function runnerSlots(conns: readonly RunnerConnection[], st: Pick<DispatchState, 'active' | 'taskSlots'>, anyNoneAgent: boolean): RunnerSlots {
  const byRunner = groupByRunner(st.active);
  const kept = groupTaskSlots(st.taskSlots);
  const candidates = conns.map((c) => openRunner(c, byRunner.get(c.runnerId) ?? [])).filter((x) => !x.active.some((a) => a.holds === 'runner'));
  const free = candidates.reduce((n, x) => n + Math.max(0, x.free), 0);
  return { candidates, kept, free, anyNone: candidates.length > 0 && anyNoneAgent };
}

/**
 * The candidates that may take a job now: not on hold (`heldRunnerIds` from the store, read
 * with the queue: a hold set before a job was created is always seen when that job is matched;
 * the connection's own short hold after a refusal, `holdUntil`, past `now` epoch ms), with a
 * free slot unless jobs holding nothing may still fit.
 */
export function openRunners(s: RunnerSlots, heldRunnerIds: readonly number[], now: number): OpenRunner[] {
  const held = new Set(heldRunnerIds);
  return s.candidates.filter((x) => x.c.holdUntil <= now && !held.has(x.c.runnerId) && (x.free > 0 || s.anyNone));
}

/**
 * Index in `open` of the runner job `q` goes to: pinned to it or any, labels matching, where it
 * fits (what it holds, its workspace, the kept task slots), with the most free slots; ties: the
 * first (the one that waited longest in `open`). -1 when none.
 */
export function bestRunner(q: Pick<QueuedJobRef, 'pinnedRunnerId' | 'selector'>, holds: JobHolds, workspace: number, open: readonly OpenRunner[], kept: Map<number, HeldSlot[]>): number {
  let best = -1;
  for (let i = 0; i < open.length; i++) {
    const x = open[i]!;
    if (q.pinnedRunnerId !== null && q.pinnedRunnerId !== x.c.runnerId) continue;
    if (!selectorMatches(q.selector, x.c.labels)) continue;
    // the connection is its own RunnerLimits (capacity, browserSlots): no object per runner
    if (whyNotFits(holds, workspace, withTaskSlots(x.active, kept.get(x.c.runnerId), workspace), x.c) !== null) continue;
    if (best < 0 || x.free > open[best]!.free) best = i;
  }
  return best;
}

/**
 * Index in `open` of the runner a whole-runner job `q` waits for (no runner is empty for it now):
 * of those its labels (and pin) match, the one with the fewest active jobs, then the lowest id.
 * -1 when none matches.
 */
export function reserveFor(q: Pick<QueuedJobRef, 'pinnedRunnerId' | 'selector'>, open: readonly OpenRunner[]): number {
  let best = -1;
  for (let i = 0; i < open.length; i++) {
    const x = open[i]!;
    if (q.pinnedRunnerId !== null && q.pinnedRunnerId !== x.c.runnerId) continue;
    if (!selectorMatches(q.selector, x.c.labels)) continue;
    const b = best < 0 ? null : open[best]!;
    if (!b || x.active.length < b.active.length || (x.active.length === b.active.length && x.c.runnerId < b.c.runnerId)) best = i;
  }
  return best;
}

/** Active assignments grouped by runner, as capacity slots. */
export function groupByRunner(active: readonly ActiveAssignment[]): Map<number, HeldSlot[]> {
  const m = new Map<number, HeldSlot[]>();
  for (const a of active) {
    const list = m.get(a.runnerId) ?? [];
    list.push({ holds: a.holds, workspace: a.workspace });
    m.set(a.runnerId, list);
  }
  return m;
}
