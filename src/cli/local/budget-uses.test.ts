import { expect, it } from 'vitest';
import type { JobRow } from '../../store/types.js';
import { budgetServerSuites, T } from './test-budget-server.js';

/**
 * Issue 6, the budget a job uses: its own sub-limit, else its nearest sub-limited ancestor's,
 * else its tree's. `GET/POST /api/jobs/:id/budget`, `flotilla budget JOB [--add USD]` and
 * `flotilla jobs show JOB` show and top up that one; a refused sub-limit top-up names the
 * budget above that bounds it; a job paused for budget is told which top-ups resume it; the
 * view names the budget that bounds `left` (`budget.boundedBy`). Real server, store (SQLite,
 * and PostgreSQL when reachable) and CLI; trees R ($1.00) → C (sub-limit $0.60) → G (none of its
 * own) / D (its own $0.30).
 */
budgetServerSuites(({ server, tree, charge, view, cli }) => {
  /** Job `j` running, then paused for budget by a refused call of `needMicros` (as the gateway pauses it). */
  const pause = async (j: JobRow, needMicros: number) => {
    const store = server()!.store;
    expect(await store.transitionJob(j.id, null, ['queued'], 'assigned', T)).not.toBeNull();
    const running = await store.transitionJob(j.id, null, ['assigned'], 'running', T, { startedAt: T });
    const why = `budget: this call may cost up to $${(needMicros / 1e6).toFixed(6)}.`;
    expect(await store.pauseJobForBudget(j.id, running!.attempt, why, T, needMicros)).not.toBeNull();
  };
  const line = (out: string, head: string) => out.split('\n').find((l) => l.startsWith(head));

  it("a job without a sub-limit under a sub-limited ancestor shows, and tops up, the ancestor's sub-limit; the top-up resumes it", async (ctx) => {
    const t = server();
    if (!t) return ctx.skip();
    const { r, c, g } = await tree();
    await charge(r, c, 100_000); // C: $0.50 left of $0.60; the tree: $0.90 of $1.00
    await pause(g, 600_000); // G's call needs $0.60: C's sub-limit lacks $0.10 of it, the tree has room
    expect(await view(g.id)).toEqual({
      jobId: g.id,
      budget: { rootId: r.id, jobId: c.id, limitMicros: 600_000, spentMicros: 100_000, reservedMicros: 0, remainingMicros: 500_000 },
      jobStatus: 'paused',
      pausedJobs: [],
      resumed: [],
      resumeNeeds: { needMicros: 600_000, short: [{ jobId: c.id, shortMicros: 100_000 }] },
    });
    // the root's view names its paused descendant, in the API and in `flotilla budget ROOT`
    expect((await view(r.id)).pausedJobs).toEqual([g.id]);
    expect(line((await cli('budget', String(r.id))).out, 'others:')).toBe(`others:    job ${g.id} of this tree is paused for budget: flotilla budget ${g.id} says what resumes it`);
    const show = await cli('jobs', 'show', String(g.id));
    expect([show.code, show.err]).toEqual([0, '']);
    expect(line(show.out, 'budget:')).toBe(`budget:    $0.600000 (shared with job ${c.id}'s sub-limit in job tree ${r.id}, $0.500000 left)`);
    // `budget G` says `budget G --add` resumes it: C's sub-limit is the only one short
    const before = await cli('budget', String(g.id));
    expect(line(before.out, 'paused:')).toBe(`paused:    job ${g.id} is paused for budget: a top-up of at least $0.100000 resumes it (flotilla budget ${g.id} --add USD)`);

    // $0.20 onto C's sub-limit ($0.80, $0.70 left: within the tree's $0.90), not the tree's
    const add = await cli('budget', String(g.id), '--add', '0.2');
    expect([add.code, add.err]).toEqual([0, '']);
    expect(add.out.split('\n').slice(0, 9)).toEqual([
      `added $0.200000 to job ${c.id}'s sub-limit`,
      `tree:      ${r.id} (job ${g.id} is in it)`,
      `sub-limit: job ${c.id} (it and its descendants, job ${g.id} among them; never more than is left above it)`,
      'budget:    $0.800000',
      'spent:     $0.100000',
      'reserved:  $0.000000',
      // resumed, G holds the room of its $0.60 call (store/budget-holds.ts): its own, so left for it;
      // the sub-limit's other jobs have $0.80 − $0.10 − $0.60 = $0.10 of it
      // still queued: its hold lapses at its resume + 15 min (the default FLOTILLA_GATEWAY_BUDGET_HOLD_MS)
      `holds:     $0.600000 for its own call, the one it was resumed for (counted in left: its own calls may use it), until it makes it or ends, or until ${new Date((await t.store.getJob(g.id))!.resumedAt! + 15 * 60_000).toISOString().replace(/\.\d+Z$/, 'Z')} if it has not started by then`,
      "left:      $0.700000; $0.600000 of it its own hold, $0.100000 for the other jobs",
      `resumed:   job ${g.id}`,
    ]);
    expect((await t.store.getTreeBudget(r.id, T))?.limitMicros).toBe(1_000_000);
    expect((await t.store.getJob(g.id))?.status).toBe('queued');
  });

  it('a refused sub-limit top-up names the budget above that bounds it: the parent\'s sub-limit, or the tree', async (ctx) => {
    const t = server();
    if (!t) return ctx.skip();
    const { r, c, d } = await tree();
    await charge(r, c, 1); // C: $0.599999 left; the tree $0.999999; D its own $0.30
    // D's room may grow to C's $0.599999: at most $0.299999 more
    const refused = await cli('budget', String(d.id), '--add', '0.3');
    expect(refused.code).toBe(1);
    expect(refused.err).toContain(`addUsd: job ${d.id}'s sub-limit can grow by at most $0.299999: job ${c.id}'s budget has $0.599999 left and job ${d.id}'s own has $0.300000 left; top up job ${c.id} first: flotilla budget ${c.id} --add <USD>`);
    await charge(r, r, 600_000); // the tree: $0.399999 left, less than C's $0.599999
    const res = await t.api(`/api/jobs/${d.id}/budget`, { json: { addUsd: 0.2 } });
    expect(res.status).toBe(422);
    expect(await res.json()).toMatchObject({
      error: { code: 'budget_exceeded', field: 'addUsd', message: `addUsd: job ${d.id}'s sub-limit can grow by at most $0.099999: job tree ${r.id}'s budget has $0.399999 left and job ${d.id}'s own has $0.300000 left; top up the tree first: flotilla budget ${r.id} --add <USD>` },
    });
    expect((await t.store.getJobBudget(d.id, T))?.limitMicros).toBe(300_000); // nothing changed
    // The tree at the $100,000 cap, $0.399999 left: no hint to top it up, which would be refused.
    expect(await t.store.topUpBudget(r.id, 99_999_000_000, T)).toMatchObject({ limitMicros: 100_000_000_000 });
    await charge(r, r, 99_999_000_000);
    const capped = await cli('budget', String(d.id), '--add', '0.2');
    expect([capped.code, capped.err]).toEqual([1, `flotilla: addUsd: job ${d.id}'s sub-limit can grow by at most $0.099999: job tree ${r.id}'s budget has $0.399999 left and job ${d.id}'s own has $0.300000 left; job tree ${r.id}'s budget is at the $100000.000000 cap and cannot grow\n`]);
  });

  it('a paused job is told which top-ups resume it, tree first; the view names the budget bounding its left', async (ctx) => {
    const t = server();
    if (!t) return ctx.skip();
    const { r, c, d } = await tree();
    await charge(r, c, 500_000); // C: $0.10 left of $0.60; the tree $0.50
    await pause(d, 200_000); // D's call needs $0.20: its own $0.30 has room, C's lacks $0.10
    expect(await view(d.id)).toEqual({
      jobId: d.id,
      budget: { rootId: r.id, jobId: d.id, limitMicros: 300_000, spentMicros: 0, reservedMicros: 0, remainingMicros: 100_000, boundedBy: { jobId: c.id, limitMicros: 600_000, remainingMicros: 100_000 } },
      jobStatus: 'paused',
      pausedJobs: [],
      resumed: [],
      resumeNeeds: { needMicros: 200_000, short: [{ jobId: c.id, shortMicros: 100_000 }] },
    });
    const one = await cli('budget', String(d.id));
    expect([one.code, one.err]).toEqual([0, '']);
    expect(line(one.out, 'left:')).toBe(`left:      $0.100000 (bounded by job ${c.id}: $0.100000 left of its own $0.600000)`);
    expect(line(one.out, 'paused:')).toBe(`paused:    job ${d.id} is paused for budget: its refused call, sent again on resuming (up to $0.200000) does not fit job ${c.id}'s sub-limit (short by $0.100000); top it up to resume it: flotilla budget ${c.id} --add USD`);

    await charge(r, r, 450_000); // the tree: $0.05 left, $0.15 short of $0.20
    const both = await cli('budget', String(d.id), '--json');
    expect([both.code, both.err]).toEqual([0, '']);
    expect(JSON.parse(both.out)).toEqual({
      jobId: d.id,
      budget: { rootId: r.id, jobId: d.id, limitMicros: 300_000, spentMicros: 0, reservedMicros: 0, remainingMicros: 50_000, boundedBy: { limitMicros: 1_000_000, remainingMicros: 50_000 } },
      resumed: [],
      resumeNeeds: { needMicros: 200_000, short: [{ shortMicros: 150_000 }, { jobId: c.id, shortMicros: 100_000 }] },
      jobStatus: 'paused',
      pausedJobs: [],
    });
    const text = await cli('budget', String(d.id));
    expect(line(text.out, 'paused:')).toBe(
      `paused:    job ${d.id} is paused for budget: its refused call, sent again on resuming (up to $0.200000) does not fit job tree ${r.id} (short by $0.150000) nor job ${c.id}'s sub-limit (short by $0.100000); top up each, in this order, to resume it: flotilla budget ${r.id} --add USD, then flotilla budget ${c.id} --add USD`,
    );
  });
});
