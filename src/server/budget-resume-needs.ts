import type { ResumeNeeds } from '../protocol/index.js';
import { mayResumeForBudget, pausedNeedMicros } from '../store/budget-resume.js';
import type { JobRow, TreeBudget } from '../store/types.js';

/**
 * What would resume `job` if it is paused for budget (status `paused`, endReason `budget`), by
 * THE resume rule (store/budget-resume.ts mayResumeForBudget, applied to each budget alone):
 * the refused call's worst case (pausedNeedMicros: read from the pause reason the gateway wrote,
 * "... this call may cost up to $X", which is the figure it stores as paused_need_micros; null
 * when it names none, 1 µ$ then counts) and the budgets of `path` (server/budget-path.ts
 * budgetsOnPath: the tree's first, then the sub-limits from the top down) that lack room for it,
 * each with `shortMicros` = need − (limit − spent). Undefined when the job is not paused for
 * budget. µ$.
 */
export function resumeNeedsOf(job: JobRow, path: readonly TreeBudget[]): ResumeNeeds | undefined {
  if (job.status !== 'paused' || job.endReason !== 'budget') return undefined;
  const needMicros = pausedNeedMicros({ id: job.id, root_id: job.rootId, error: job.error });
  const need = Math.max(1, needMicros ?? 1);
  const short = path
    .filter((b) => !mayResumeForBudget(true, [b], needMicros))
    .map((b) => ({ ...(b.jobId !== undefined ? { jobId: b.jobId } : {}), shortMicros: need - (b.limitMicros - b.spentMicros) }));
  return { needMicros: needMicros === null ? null : need, short };
}
