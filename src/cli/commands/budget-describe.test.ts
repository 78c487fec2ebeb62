import { describe, expect, it } from 'vitest';
import { describeBudget } from './budget.js';

describe('describeBudget', () => {
  const view = (limit: number, spent: number, reserved = 0, pausedJobs: number[] = []) => ({ jobId: 7, jobStatus: 'running' as const, pausedJobs, resumed: [], budget: { rootId: 7, limitMicros: limit, spentMicros: spent, reservedMicros: reserved, remainingMicros: Math.max(0, limit - spent - reserved) } });
  it('a tree spent past its limit says by how much', () => {
    // $2.00 limit, $50.10 spent → over by $48.10
    expect(describeBudget(view(2_000_000, 50_100_000))).toMatch(/^over by:\s+\$48\.100000 /m);
  });
  it('an ended root: what is left is said to be spent by nothing more; a running one has no such line', () => {
    expect(describeBudget(view(2_500_000, 0), undefined, 'cancelled')).toMatch(/^ended:\s+job 7 has ended \(cancelled\): its tree spends nothing more, and this budget takes no top-up$/m);
    expect(describeBudget(view(2_500_000, 0), undefined, 'running')).not.toMatch(/ended/);
    // a child that ended, shown the tree's budget (no sub-limit of its own): the tree may still spend
    expect(describeBudget({ ...view(2_500_000, 0), jobId: 9 }, undefined, 'succeeded')).not.toMatch(/ended/);
    // a child, running or paused, of a tree whose root has ended: the tree takes no top-up
    expect(describeBudget({ ...view(2_500_000, 0), jobId: 9, rootStatus: 'cancelled' }, undefined, 'paused')).toMatch(/^ended:\s+job tree 7 has ended \(its root job 7 is cancelled\): the tree spends nothing more, and its budget takes no top-up$/m);
    // ...and no advice to top up beside it (a fresh tester got both in one output)
    expect(describeBudget({ ...view(2_500_000, 2_500_000), jobId: 9, rootStatus: 'cancelled', resumeNeeds: { needMicros: 5_000, short: [{ shortMicros: 5_000 }] } }, undefined, 'paused', 'budget')).not.toMatch(/^paused:|--add/m);
  });
  it("the tree's other jobs paused for budget are named, with the command that shows what resumes each", () => {
    expect(describeBudget(view(2_000_000, 2_000_000, 0, [9]))).toMatch(/^others:\s+job 9 of this tree is paused for budget: flotilla budget 9 says what resumes it$/m);
    expect(describeBudget(view(2_000_000, 2_000_000, 0, [9, 12]))).toMatch(/^others:\s+jobs 9, 12 of this tree are paused for budget: flotilla budget 9 \(and each of the others\) says what resumes it$/m);
    expect(describeBudget(view(2_000_000, 1_000_000))).not.toMatch(/others|paused/);
  });
  it('a top-up says the limit its own update left when another top-up came at the same time, and nothing more otherwise', () => {
    expect(describeBudget({ ...view(2_250_000, 0), topUp: { addedMicros: 500_000, limitMicros: 1_500_000 } }, 0.5)).toMatch(/^added \$0\.500000 to job tree 7 \(it made the budget \$1\.500000; another top-up at the same time made it \$2\.250000\)$/m);
    expect(describeBudget({ ...view(1_500_000, 0), topUp: { addedMicros: 500_000, limitMicros: 1_500_000 } }, 0.5)).toMatch(/^added \$0\.500000 to job tree 7$/m);
  });
  it('room held for resumed jobs gets its own line, and only when there is some', () => {
    // $1.00 limit, $0.90 spent, $0.08 held → $0.02 left
    const v = view(1_000_000, 900_000);
    const held = { ...v, budget: { ...v.budget, heldMicros: 80_000, remainingMicros: 20_000 } };
    expect(describeBudget(held)).toMatch(/^reserved:\s+\$0\.000000\nheld:\s+\$0\.080000 for the calls of jobs a top-up resumed, each until it makes its call or ends\nleft:\s+\$0\.020000$/m);
    expect(describeBudget(v)).not.toMatch(/held|holds/);
    // the server names them: job 9 holds $0.05, job 12 $0.03; job 7 (shown) holds $0.01 of its own, not counted against it
    const named = { ...held, holders: [{ jobId: 7, status: 'assigned' as const, heldMicros: 10_000 }, { jobId: 9, status: 'queued' as const, heldMicros: 50_000 }, { jobId: 12, status: 'running' as const, heldMicros: 30_000 }] };
    expect(describeBudget(named)).toMatch(/^held:\s+\$0\.080000 for job 9 \(\$0\.050000, queued\), job 12 \(\$0\.030000, running\), each until it makes its call or ends \(one still queued gives it back once it has waited FLOTILLA_GATEWAY_BUDGET_HOLD_MS, 15 min by default, to start\)\nholds:\s+\$0\.010000 for its own call, the one it was resumed for \(counted in left: its own calls may use it\), until it makes it or ends\nleft:/m);
    // a paused job short of room that others hold is told it may wait instead of paying
    const paused = { ...named, jobId: 20, jobStatus: 'paused' as const, resumeNeeds: { needMicros: 30_000, short: [{ shortMicros: 10_000 }] } };
    expect(describeBudget(paused, undefined, 'paused', 'budget')).toMatch(/^paused:\s+job 20 is paused for budget: a top-up of at least \$0\.010000 resumes it \(flotilla budget 20 --add USD\); or wait: job 7 \(\$0\.010000, assigned\), job 9 \(\$0\.050000, queued\), job 12 \(\$0\.030000, running\) hold room until each makes its call or ends \(one still queued gives it back once it has waited FLOTILLA_GATEWAY_BUDGET_HOLD_MS, 15 min by default, to start\), and what is left then resumes it without a top-up if it fits$/m);
  });
  it('a shortfall that is partly the needs of jobs paused before it says how much (aheadMicros)', () => {
    // the tester's tree: jobs 3, 4, 5 paused with needs of $0.10662 each, $0.050005 left: job 5 is short by 3 × 0.10662 − 0.050005 = $0.269855, $0.21324 of it 3's and 4's
    const v = { ...view(1_000_000, 949_995), jobId: 5, jobStatus: 'paused' as const, resumeNeeds: { needMicros: 106_620, short: [{ shortMicros: 269_855, aheadMicros: 213_240 }] } };
    expect(describeBudget(v, undefined, 'paused', 'budget')).toMatch(/^paused:\s+job 5 is paused for budget: a top-up of at least \$0\.269855 \(\$0\.213240 of it for the jobs paused for budget before it, which resume first\) resumes it \(flotilla budget 5 --add USD\)$/m);
    // two budgets short: named in each
    const two = { ...v, budget: { ...v.budget, jobId: 6 }, resumeNeeds: { needMicros: 106_620, short: [{ shortMicros: 269_855, aheadMicros: 213_240 }, { jobId: 6, shortMicros: 6_620 }] } };
    expect(describeBudget(two, undefined, 'paused', 'budget')).toMatch(/does not fit job tree 7 \(short by \$0\.269855, \$0\.213240 of it for the jobs paused for budget before it, which resume first\) nor job 6's sub-limit \(short by \$0\.006620\);/);
  });
  it('a queued holder: the time its hold lapses, as the server gives it (lapsesAt)', () => {
    const v = view(1_000_000, 900_000);
    const held = { ...v, budget: { ...v.budget, heldMicros: 80_000, remainingMicros: 20_000 }, holders: [{ jobId: 9, status: 'queued' as const, heldMicros: 50_000, lapsesAt: '2026-12-07T18:05:12.000Z' }, { jobId: 12, status: 'queued' as const, heldMicros: 30_000, lapsesAt: '2026-12-07T18:20:00.000Z' }] };
    expect(describeBudget(held)).toMatch(/^held:\s+\$0\.080000 for job 9 \(\$0\.050000, queued\), job 12 \(\$0\.030000, queued\), each until it makes its call or ends \(one still queued gives it back unless it has started by then: job 9 at 2026-12-07T18:05:12Z, job 12 at 2026-12-07T18:20:00Z\)$/m);
    // the holder's own view
    const own = { ...v, jobId: 9, holders: [{ jobId: 9, status: 'queued' as const, heldMicros: 50_000, lapsesAt: '2026-12-07T18:05:12.000Z' }] };
    expect(describeBudget(own)).toMatch(/^holds:\s+\$0\.050000 for its own call, the one it was resumed for \(counted in left: its own calls may use it\), until it makes it or ends, or until 2026-12-07T18:05:12Z if it has not started by then$/m);
  });
  it("a holder's left says what of it is its own hold and what the tree's other jobs have", () => {
    // root 7 holds $0.05 for its resumed call; $1.00 limit, $0.92 spent → left $0.08 for it, $0.03 for the others
    const v = view(1_000_000, 920_000);
    const own = { ...v, budget: { ...v.budget, remainingMicros: 80_000 }, ownHeldMicros: 50_000, holders: [{ jobId: 7, status: 'running' as const, heldMicros: 50_000 }] };
    expect(describeBudget(own)).toMatch(/^left:\s+\$0\.080000; \$0\.050000 of it its own hold, \$0\.030000 for the other jobs$/m);
    // a server older than ownHeldMicros: the job's own entry in holders says the same
    const { ownHeldMicros: _, ...older } = own;
    expect(describeBudget(older)).toMatch(/^left:\s+\$0\.080000; \$0\.050000 of it its own hold, \$0\.030000 for the other jobs$/m);
    // its need priced again after a price rise: it holds $0.065538 where $0.035538 is left (the tester's tree: $0.060548 limit, $0.025010 spent)
    const v2 = view(60_548, 25_010);
    const over = { ...v2, budget: { ...v2.budget, remainingMicros: 35_538 }, ownHeldMicros: 65_538, holders: [{ jobId: 7, status: 'queued' as const, heldMicros: 65_538 }] };
    expect(describeBudget(over)).toMatch(/^left:\s+\$0\.035538; its own hold of \$0\.065538 is \$0\.030000 more than that$/m);
    expect(describeBudget(over)).toMatch(/^over by:\s+\$0\.030000 with the held room: resumed jobs \(this one among them\) hold more than is left .*a top-up of at least \$0\.030000 comes first$/m);
    // a job holding nothing: the left line stays bare
    expect(describeBudget(v)).toMatch(/^left:\s+\$0\.080000$/m);
  });
  it('held room past what calls in flight left: says by how much, and why (the resume rule does not count calls in flight)', () => {
    // the fresh tester's tree: $0.004 limit, $0.000600 spent, $0.000544 reserved, $0.003012 held → $0.000156 over
    const v = view(4_000, 600, 544);
    const held = { ...v, budget: { ...v.budget, heldMicros: 3_012, remainingMicros: 0 } };
    expect(describeBudget(held)).toMatch(/^over by:\s+\$0\.000156 with the held room, until the calls in flight settle \(reserved at their worst case, they settle lower as a rule; a resumed call they keep out waits for them\)$/m);
    // more over than calls in flight explain (a need priced again after a price rise: none in flight)
    const repriced = { ...view(8_000, 0), budget: { ...view(8_000, 0).budget, heldMicros: 15_528, remainingMicros: 0 } };
    expect(describeBudget(repriced)).toMatch(/^over by:\s+\$0\.007528 with the held room: resumed jobs hold more than is left \(a price went up, or calls cost more than they reserved, since they were resumed\); their calls pause them again unless a top-up of at least \$0\.007528 comes first$/m);
    // exactly at the limit with it: no line
    expect(describeBudget({ ...v, budget: { ...v.budget, heldMicros: 2_856, remainingMicros: 0 } })).not.toMatch(/over by/);
  });
  it('within its limit: no over line', () => {
    expect(describeBudget(view(2_000_000, 1_000_000, 1_000_000))).not.toMatch(/over by/);
  });
});
