import type { ResumeNeeds } from '../protocol/index.js';
import { holdKey, mayResumeForBudget, pausedNeedMicros, withHolds, type BudgetHolds } from '../store/budget-resume.js';
import type { JobRow, TreeBudget } from '../store/types.js';

/**
 * What would resume `job` if it is paused for budget (status `paused`, endReason `budget`), by
 * THE resume rule (store/budget-resume.ts mayResumeForBudget, applied to each budget alone):
 * the refused call's worst case as the rule reads it (store/budget-resume.ts pausedNeedMicros:
 * the stored `jobs.paused_need_micros`, carried as `job.pausedNeedMicros`; for a job paused
 * before 0024, or a row read without that column, the amount its pause reason names, "... this
 * call may cost up to $X"; null when neither says, 1 µ$ then counts) and the budgets of `path`
 * (server/budget-path.ts budgetsOnPath: the tree's first, then the sub-limits from the top down)
 * that lack room for it, each with `shortMicros` = need − (limit − spent − held), `held` what
 * jobs resumed earlier hold on that budget until their first call (`holds`:
 * store/budget-resume.ts resumedNeedHolds; the rule counts it as spent), and `aheadMicros` the
 * part of it that `ahead` holds (the needs of jobs paused before it: store/budget-resume.ts
 * holdsAhead with pausedOnly). Undefined when the job is not paused for budget. µ$.
 */
export function resumeNeedsOf(job: JobRow, path: readonly TreeBudget[], holds: BudgetHolds = new Map(), ahead: BudgetHolds = new Map()): ResumeNeeds | undefined {
  if (job.status !== 'paused' || job.endReason !== 'budget') return undefined;
  const needMicros = pausedNeedMicros({ id: job.id, root_id: job.rootId, error: job.error, paused_need_micros: job.pausedNeedMicros });
  const need = Math.max(1, needMicros ?? 1);
  const short = withHolds(path, holds)
    .filter((b) => !mayResumeForBudget(true, [b], needMicros))
    .map((b) => {
      const shortMicros = need - (b.limitMicros - b.spentMicros);
      // the part of the shortfall that is the needs of jobs paused before it (fresh tester: a
      // figure 2.5 times its call's, unexplained)
      const aheadMicros = Math.min(shortMicros, ahead.get(holdKey(b)) ?? 0);
      return { ...(b.jobId !== undefined ? { jobId: b.jobId } : {}), shortMicros, ...(aheadMicros > 0 ? { aheadMicros } : {}) };
    });
  return { needMicros: needMicros === null ? null : need, short };
}
