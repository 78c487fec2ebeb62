import type { JobHolds } from '../protocol/index.js';

/** One active job on a runner, as the capacity rule sees it. `workspace`: the workspace key (see {@link workspaceKey}). */
export interface HeldSlot {
  holds: JobHolds;
  workspace: number;
}

/** A runner's limits: parallel jobs 1–4 and browser slots 1–4 (never more than parallel jobs). */
export interface RunnerLimits {
  capacity: number;
  browserSlots: number;
}

/** The workspace a job works in: the job it continues (`workspaceJobId`) or its own id. */
export function workspaceKey(job: { id: number; workspaceJobId?: number | null }): number {
  return job.workspaceJobId ?? job.id;
}

/** Browser slots as counted: at most the parallel jobs (issue 5: "never more than its parallel jobs"). */
export function effectiveBrowserSlots(limits: RunnerLimits): number {
  return Math.max(0, Math.min(limits.browserSlots, limits.capacity));
}

/**
 * Why a job holding `holds` on workspace `workspace` cannot start beside `active` on a runner
 * with `limits` — or null when it fits. Rules (issue 5, capacity):
 * - a `runner` job runs alone: it needs no other active job, and nothing starts beside it;
 * - `workspace` and `browser` jobs take one parallel-job slot each (`none` takes none);
 * - a `browser` job also takes one browser slot;
 * - two jobs on the same workspace never run together (the later one waits).
 * Pure: no I/O.
 */
export function whyNotFits(holds: JobHolds, workspace: number, active: readonly HeldSlot[], limits: RunnerLimits): string | null {
  // One loop, no arrays or closures: the dispatcher asks this for every open runner of every
  // queued job it matches (bench/dispatch).
  let used = 0;
  let browsers = 0;
  let sameWorkspace = false;
  for (let i = 0; i < active.length; i++) {
    const a = active[i]!;
    if (a.holds === 'runner') return 'a whole-runner job is running';
    if (a.workspace === workspace) sameWorkspace = true;
    if (a.holds !== 'none') used++;
    if (a.holds === 'browser') browsers++;
  }
  if (holds === 'runner') return active.length > 0 ? `a whole-runner job needs the runner idle (${active.length} running)` : null;
  if (sameWorkspace) return `workspace of job ${workspace} is in use`;
  if (holds === 'none') return null;
  if (used >= limits.capacity) return `parallel jobs full (${used}/${limits.capacity})`;
  if (holds === 'browser') {
    const slots = effectiveBrowserSlots(limits);
    if (browsers >= slots) return `browser slots full (${browsers}/${slots})`;
  }
  return null;
}

/** Parallel-job slots in use (`none` jobs take none; a `runner` job takes them all). */
export function slotsUsed(active: readonly HeldSlot[], limits: RunnerLimits): number {
  let used = 0;
  for (let i = 0; i < active.length; i++) {
    const h = active[i]!.holds;
    if (h === 'runner') return limits.capacity;
    if (h !== 'none') used++;
  }
  return used;
}

/** Parses a stored `holds` value; unknown or null → `workspace` (the default). */
export function parseHolds(v: string | null | undefined): JobHolds {
  return v === 'runner' || v === 'browser' || v === 'none' ? v : 'workspace';
}
