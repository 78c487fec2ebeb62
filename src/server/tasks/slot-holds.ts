import type { HeldSlot } from '../../core/capacity.js';
import type { TaskSlot } from '../../store/types.js';

/**
 * Runner slots kept by idle tasks (issue 7 idle timeout: "after each reply the task keeps its
 * runner slot for the agent's idle time, then releases it"), grouped by runner id, as
 * `workspace` capacity slots keyed by the task's workspace.
 */
export function groupTaskSlots(slots: readonly TaskSlot[]): Map<number, HeldSlot[]> {
  const m = new Map<number, HeldSlot[]>();
  for (const s of slots) {
    const list = m.get(s.runnerId) ?? [];
    list.push({ holds: 'workspace', workspace: s.workspace });
    m.set(s.runnerId, list);
  }
  return m;
}

/**
 * What a job on `workspace` sees as taken on a runner: its `active` jobs plus the slots kept by
 * idle tasks, except the slot kept for this very workspace (the task's next turn takes it) and
 * kept slots whose turn is already active there (counted once, as the active job).
 */
export function withTaskSlots(active: readonly HeldSlot[], kept: readonly HeldSlot[] | undefined, workspace: number): readonly HeldSlot[] {
  if (!kept || kept.length === 0) return active;
  return [...active, ...kept.filter((k) => k.workspace !== workspace && !active.some((a) => a.workspace === k.workspace))];
}

/** After a job on `workspace` was placed on a runner: the slot kept for it is its now (removed from `kept`). */
export function takeTaskSlot(kept: HeldSlot[] | undefined, workspace: number): void {
  if (!kept) return;
  const i = kept.findIndex((k) => k.workspace === workspace);
  if (i >= 0) kept.splice(i, 1);
}
