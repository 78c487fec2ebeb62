import type { TreeBudget } from './types.js';

/**
 * A budget's figures as the store gives them (a tree's row, `jobId` absent, or a child's
 * sub-limit), µ$: `remainingMicros` = max(0, limit − spent − reserved − held), `heldMicros` the
 * room held for resumed jobs' calls (budget-holds.ts) less `ownMicros`, the calling job's own
 * part of it (a holder's calls are not kept out by its own hold), present only when above 0 (a
 * budget nobody holds room of reads as before 0027).
 */
export function budgetFigures(rootId: number, jobId: number | undefined, limitMicros: number, spentMicros: number, reservedMicros: number, heldMicros: number, ownMicros = 0): TreeBudget {
  const held = Math.max(0, heldMicros - ownMicros);
  return {
    rootId,
    ...(jobId !== undefined ? { jobId } : {}),
    limitMicros,
    spentMicros,
    reservedMicros,
    ...(held > 0 ? { heldMicros: held } : {}),
    remainingMicros: Math.max(0, limitMicros - spentMicros - reservedMicros - held),
  };
}

/** True when a call of `worstMicros` does not fit budget `b` (figures as {@link budgetFigures} gives them): spent + reserved + held + worst > limit. */
export function doesNotFit(b: TreeBudget, worstMicros: number): boolean {
  return b.spentMicros + b.reservedMicros + (b.heldMicros ?? 0) + worstMicros > b.limitMicros;
}
