import { whyNotFits, type HeldSlot, type RunnerLimits } from '../../core/capacity.js';
import type { JobHolds } from '../../protocol/index.js';
import type { TaskSlot } from '../../store/types.js';

/** A connected runner as the explanation needs it: id, name, limits and its active jobs' slots. */
export interface RunnerView {
  runnerId: number;
  name: string;
  limits: RunnerLimits;
  active: readonly HeldSlot[];
}

/**
 * Why a queued job waits although runners match it, when the reason is slots kept by idle
 * tasks (issue 7 idle timeout; FX2: "still waiting for a runner" said no reason). Returns e.g.
 * `waiting: runner r1: slot kept by task 3 until 2026-11-30T17:00:00.000Z (tasks suspend 3 frees it)`
 * (`flotilla run` then prints `… still waiting: runner r1: …`)
 * when on every matching runner the job would fit but for the kept slots, else null. `slots`
 * are the unexpired kept slots (`until`: epoch ms). Pure: no I/O.
 */
export function keptSlotReason(holds: JobHolds, workspace: number, matching: readonly RunnerView[], slots: readonly TaskSlot[]): string | null {
  if (matching.length === 0 || slots.length === 0) return null;
  const parts: string[] = [];
  for (const r of matching) {
    if (whyNotFits(holds, workspace, r.active, r.limits) !== null) return null; // full anyway: not the slots' doing
    const kept = slots.filter((s) => s.runnerId === r.runnerId && s.workspace !== workspace && !r.active.some((a) => a.workspace === s.workspace));
    const withKept: HeldSlot[] = [...r.active, ...kept.map((s) => ({ holds: 'workspace' as const, workspace: s.workspace }))];
    if (kept.length === 0 || whyNotFits(holds, workspace, withKept, r.limits) === null) return null; // it fits: it will be placed
    parts.push(`runner ${r.name}: slot kept by ${kept.map((s) => `task ${s.taskId} until ${new Date(s.until).toISOString()} (tasks suspend ${s.taskId} frees it)`).join(', ')}`);
  }
  return `waiting: ${parts.join('; ')}`;
}
