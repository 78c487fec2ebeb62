import type { BudgetView } from './api.js';
import { usd, when } from './format.js';

/** "job tree 1" or "job 2's sub-limit": a budget on a path (`jobId` absent: the tree `rootId`'s). */
const budgetName = (rootId: number, jobId?: number) => (jobId === undefined ? `job tree ${rootId}` : `job ${jobId}’s sub-limit`);

/**
 * What resumes job `v.jobId`, paused for budget, in the words of `flotilla budget` (cli/commands/
 * budget.ts pausedLine) with the page's Top up button for its command: from `v.resumeNeeds` (the
 * budgets on its path short of room for its refused call, tree first). The page showed nothing
 * of it, so a top-up too small to resume the job looked like one that did (fresh-tester finding).
 */
export function resumeNeedsText(v: BudgetView): string {
  const short = v.resumeNeeds?.short ?? [];
  if (short.length === 0) return `Paused for budget: a top-up resumes it.`;
  // room other resumed jobs hold comes back by itself: waiting may resume it without a top-up (fresh tester)
  const others = (v.holders ?? []).filter((h) => h.jobId !== v.jobId);
  const wait = others.length ? ` Or wait: ${others.map((h) => `#${h.jobId} (${h.status})`).join(', ')} ${others.length === 1 ? 'holds' : 'hold'} ${usd(others.reduce((n, h) => n + h.heldMicros, 0))} until ${others.length === 1 ? 'it makes its call' : 'each makes its call'} or ends${queuedLapse(others)}; what is left then resumes it if its call fits.` : '';
  if (short.length === 1 && short[0]!.jobId === v.budget.jobId) return `Paused for budget: a top-up of at least ${usd(short[0]!.shortMicros)}${aheadPart(short[0]!) ? ` (${aheadPart(short[0]!)})` : ''} resumes it.${wait}`;
  const need = v.resumeNeeds?.needMicros;
  const call = need ? `its refused call, sent again on resuming (up to ${usd(need)}),` : 'its refused call';
  const names = short.map((s) => `${budgetName(v.budget.rootId, s.jobId)} (short by ${usd(s.shortMicros)}${aheadPart(s) ? `, ${aheadPart(s)}` : ''})`);
  const pages = short.map((s) => `#${s.jobId ?? v.budget.rootId}`);
  return `Paused for budget: ${call} does not fit ${names.join(' nor ')}; ${short.length > 1 ? `top up each, in this order (on the pages of ${pages.join(', then ')})` : `top it up (on the page of ${pages[0]})`} to resume it.${wait}`;
}

/** The part of a shortfall that is the needs of jobs paused before this one (`aheadMicros`), as `flotilla budget` words it; '' when none. */
function aheadPart(s: { aheadMicros?: number | undefined }): string {
  return s.aheadMicros ? `${usd(s.aheadMicros)} of it for the jobs paused for budget before it, which resume first` : '';
}

/** What a top-up of `addedUsd` did, from the server's answer: the jobs it resumed, or that job `v.jobId` is still paused. */
export function topUpText(v: BudgetView, addedUsd: number): string {
  const added = `Added ${usd(Math.round(addedUsd * 1_000_000))} to ${budgetName(v.budget.rootId, v.budget.jobId)}`;
  if (v.resumed.length > 0) return `${added}; resumed ${v.resumed.map((r) => `#${r}`).join(', ')}.`;
  if (v.jobStatus === 'paused') return `${added}; job #${v.jobId} is still paused: not enough to resume it.`;
  return `${added}.`;
}

/**
 * When spent and reserved stand past the limit (a call charged past its worst case: reported
 * input above the estimate, calls in flight at once; or a limit lowered), by how much, as
 * `flotilla budget`'s `over by:` line says it; else null. The page showed "$0.000000 left" and
 * a red bar only (fresh tester).
 */
export function overSpentText(b: { limitMicros: number; spentMicros: number; reservedMicros: number }): string | null {
  const over = b.spentMicros + b.reservedMicros - b.limitMicros;
  return over > 0 ? `over by ${usd(over)} (a top-up of this much or less leaves nothing to spend)` : null;
}

/**
 * When the room held for resumed jobs and the calls in flight stand over the limit (µ$ figures
 * of a budget): by how much, and why, as `flotilla budget` says it (cli/commands/budget.ts
 * `over by:`); null otherwise, and when spent and reserved alone are over it. The resume rule
 * does not count calls in flight (store/budget-resume.ts), so a resume may hold room they have
 * reserved; the bar, capped at the limit, showed nothing of it (fresh tester).
 */
export function overHeldText(b: { limitMicros: number; spentMicros: number; reservedMicros: number; heldMicros?: number }): string | null {
  if (b.spentMicros + b.reservedMicros > b.limitMicros) return null;
  const over = b.spentMicros + b.reservedMicros + (b.heldMicros ?? 0) - b.limitMicros;
  if (over <= 0) return null;
  if (over <= b.reservedMicros) return `${usd(over)} over with the held room, until the calls in flight settle (reserved at their worst case, they settle lower as a rule)`;
  // more than calls in flight explain: a need priced again after a price rise, or a call charged past its reservation
  return `${usd(over)} over with the held room: resumed jobs hold more than is left (a price went up, or calls cost more than they reserved); their calls pause them again unless a top-up of at least ${usd(over)} comes first`;
}

/**
 * When a holder has not started (queued): its room comes back after the server's hold time too
 * (server/budget-sweep.ts), as `flotilla budget` says it: at the time the server gives
 * (`lapsesAt`, shown in local time), else after FLOTILLA_GATEWAY_BUDGET_HOLD_MS.
 */
export function queuedLapse(holders: ReadonlyArray<{ jobId: number; status: string; lapsesAt?: string | undefined }>): string {
  const queued = holders.filter((h) => h.status === 'queued');
  if (queued.length === 0) return '';
  if (queued.some((h) => h.lapsesAt === undefined)) return ' (one still queued gives it back once it has waited FLOTILLA_GATEWAY_BUDGET_HOLD_MS, 15 min by default, to start)';
  return ` (one still queued gives it back unless it has started by then: ${queued.map((h) => `#${h.jobId} at ${when(h.lapsesAt)}`).join(', ')})`;
}
