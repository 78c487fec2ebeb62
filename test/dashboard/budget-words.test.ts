// What the job page says resumes a job paused for budget (web/src/budget-words.ts), worded as
// `flotilla budget` words it: the short budgets are topped up in the order listed, outermost
// first; that is not "the tree first" when the tree is not short (a fresh tester), and one
// short budget is "top it up" ("top up it", said the page).
import { describe, expect, it } from 'vitest';
import { resumeNeedsText } from '../../web/src/budget-words.js';
import type { BudgetView } from '../../web/src/api.js';

const view = (short: Array<{ jobId?: number; shortMicros: number }>): BudgetView => ({
  jobId: 50,
  jobStatus: 'paused',
  budget: { rootId: 48, jobId: 50, limitMicros: 3_000, spentMicros: 1_300, reservedMicros: 0, remainingMicros: 1_700 },
  pausedJobs: [],
  resumed: [],
  resumeNeeds: { needMicros: 3_759, short },
});

describe('resumeNeedsText', () => {
  it('two sub-limits short, the tree not: in this order, no word of the tree first', () => {
    expect(resumeNeedsText(view([{ jobId: 49, shortMicros: 3_159 }, { jobId: 50, shortMicros: 2_459 }]))).toBe(
      'Paused for budget: its refused call, sent again on resuming (up to $0.003759), does not fit job 49’s sub-limit (short by $0.003159) nor job 50’s sub-limit (short by $0.002459); top up each, in this order (on the pages of #49, then #50) to resume it.',
    );
  });
  it('only the tree short, from a child\'s page: top it up, on the tree\'s page', () => {
    expect(resumeNeedsText(view([{ shortMicros: 1_000 }]))).toBe('Paused for budget: its refused call, sent again on resuming (up to $0.003759), does not fit job tree 48 (short by $0.001000); top it up (on the page of #48) to resume it.');
  });
});
