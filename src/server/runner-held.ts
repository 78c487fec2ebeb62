import type { HeldSlot } from '../core/capacity.js';
import type { Store } from '../store/types.js';

/**
 * What the active jobs of runner `runnerId` hold (for `runnerView`'s `slotsUsed`): its live
 * assignments from the store (`listActiveAssignments`), as {@link HeldSlot}s. Store errors pass through.
 */
export async function heldSlotsOf(store: Pick<Store, 'listActiveAssignments'>, runnerId: number): Promise<HeldSlot[]> {
  const all = await store.listActiveAssignments();
  return all.filter((a) => a.runnerId === runnerId).map((a) => ({ holds: a.holds, workspace: a.workspace }));
}
