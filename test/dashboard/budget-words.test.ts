// What the job page says resumes a job paused for budget (web/src/budget-words.ts), worded as
// `flotilla budget` words it: the short budgets are topped up in the order listed, outermost
// first; that is not "the tree first" when the tree is not short (a fresh tester), and one
// short budget is "top it up" ("top up it", said the page).
import { describe, expect, it } from 'vitest';
import { overHeldText, overSpentText, queuedLapse, resumeNeedsText } from '../../web/src/budget-words.js';
import type { BudgetView } from '../../web/src/api.js';

const view = (short: Array<{ jobId?: number; shortMicros: number; aheadMicros?: number }>): BudgetView => ({
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
  it('room other resumed jobs hold: it may wait for it instead (its own hold is not named)', () => {
    const held = { ...view([{ jobId: 50, shortMicros: 2_459 }]), holders: [{ jobId: 50, status: 'paused' as const, heldMicros: 10 }, { jobId: 51, status: 'queued' as const, heldMicros: 1_200 }, { jobId: 52, status: 'running' as const, heldMicros: 800 }] };
    expect(resumeNeedsText(held)).toBe('Paused for budget: a top-up of at least $0.002459 resumes it. Or wait: #51 (queued), #52 (running) hold $0.002000 until each makes its call or ends (one still queued gives it back once it has waited FLOTILLA_GATEWAY_BUDGET_HOLD_MS, 15 min by default, to start); what is left then resumes it if its call fits.');
    expect(resumeNeedsText({ ...held, holders: held.holders.slice(0, 2) })).toBe('Paused for budget: a top-up of at least $0.002459 resumes it. Or wait: #51 (queued) holds $0.001200 until it makes its call or ends (one still queued gives it back once it has waited FLOTILLA_GATEWAY_BUDGET_HOLD_MS, 15 min by default, to start); what is left then resumes it if its call fits.');
  });
});

describe('overHeldText', () => {
  it('held room and calls in flight over the limit: by how much; not when within it, nor when spent and reserved alone are over', () => {
    // $0.004 limit, $0.000600 spent, $0.000544 reserved, $0.003012 held: $0.000156 over
    expect(overHeldText({ limitMicros: 4_000, spentMicros: 600, reservedMicros: 544, heldMicros: 3_012 })).toBe('$0.000156 over with the held room, until the calls in flight settle (reserved at their worst case, they settle lower as a rule)');
    expect(overHeldText({ limitMicros: 4_000, spentMicros: 600, reservedMicros: 544, heldMicros: 2_856 })).toBeNull();
    // more than the calls in flight explain: $0.008 limit, nothing in flight, $0.015528 held (a need priced again)
    expect(overHeldText({ limitMicros: 8_000, spentMicros: 0, reservedMicros: 0, heldMicros: 15_528 })).toBe('$0.007528 over with the held room: resumed jobs hold more than is left (a price went up, or calls cost more than they reserved); their calls pause them again unless a top-up of at least $0.007528 comes first');
    expect(overHeldText({ limitMicros: 4_000, spentMicros: 600, reservedMicros: 3_401 })).toBeNull();
    expect(overHeldText({ limitMicros: 4_000, spentMicros: 600, reservedMicros: 3_401, heldMicros: 5 })).toBeNull();
  });
});

describe('a shortfall partly for jobs paused before it', () => {
  it('says how much of it is theirs (aheadMicros), as flotilla budget does', () => {
    const v = view([{ jobId: 50, shortMicros: 269_855, aheadMicros: 213_240 }]);
    expect(resumeNeedsText(v)).toBe('Paused for budget: a top-up of at least $0.269855 ($0.213240 of it for the jobs paused for budget before it, which resume first) resumes it.');
  });
});

describe('queuedLapse', () => {
  it('a queued holder with lapsesAt: the time (local) its hold lapses unless it starts; without it (an older server), the setting named', () => {
    // 18:05:12 local, whatever this machine's time zone
    const at = new Date(2026, 11, 7, 18, 5, 12).toISOString();
    expect(queuedLapse([{ jobId: 51, status: 'queued', lapsesAt: at }, { jobId: 52, status: 'running' }])).toBe(' (one still queued gives it back unless it has started by then: #51 at 2026-12-07 18:05:12)');
    expect(queuedLapse([{ jobId: 51, status: 'queued' }])).toBe(' (one still queued gives it back once it has waited FLOTILLA_GATEWAY_BUDGET_HOLD_MS, 15 min by default, to start)');
    expect(queuedLapse([{ jobId: 52, status: 'running' }])).toBe('');
  });
});

describe('overSpentText', () => {
  it('names by how much spent and reserved stand past the limit, as flotilla budget does; nothing within it', () => {
    // $0.05 limit, $0.063 spent → over by $0.013
    expect(overSpentText({ limitMicros: 50_000, spentMicros: 63_000, reservedMicros: 0 })).toBe('over by $0.013000 (a top-up of this much or less leaves nothing to spend)');
    expect(overSpentText({ limitMicros: 50_000, spentMicros: 40_000, reservedMicros: 10_001 })).toBe('over by $0.000001 (a top-up of this much or less leaves nothing to spend)');
    expect(overSpentText({ limitMicros: 50_000, spentMicros: 40_000, reservedMicros: 10_000 })).toBeNull();
  });
});
