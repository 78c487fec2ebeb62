import { expect, it } from 'vitest';
import { budgetServerSuites } from './test-budget-server.js';

/**
 * Issue 6: a child's sub-limit may be larger than what is left above it (the tree, or a
 * sub-limited ancestor). What the API (`GET /api/jobs/:id/budget`) and `flotilla budget JOB`
 * show as the child's `left` is the least room on its path — what a call of it can really
 * reserve — and the view (`budget.boundedBy`) and the CLI name the budget that bounds it.
 * Real server and store (SQLite, and PostgreSQL when reachable), real trees: root R → child C (sub-limit) → grandchild G (sub-limit).
 */
budgetServerSuites(({ server, job, charge, view: budgetView, cli }) => {
  /** R ($1.00) → C (cLimit) → G (gLimit). */
  const tree = async (cLimit: number, gLimit: number) => {
    const r = await job(null, 1_000_000);
    const c = await job(r.id, cLimit);
    const g = await job(c.id, gLimit);
    return { r, c, g };
  };
  const view = async (id: number) => (await budgetView(id)).budget;
  const cliLeft = async (id: number) => {
    const run = await cli('budget', String(id));
    expect([run.code, run.err]).toEqual([0, '']);
    return run.out.split('\n').find((l) => l.startsWith('left:'));
  };

  it('the tree bounds: G has $0.40 of its own but the tree only $0.20 ($0.70 spent, $0.10 reserved)', async (ctx) => {
    if (!server()) return ctx.skip();
    const { r, c, g } = await tree(500_000, 400_000);
    await charge(r, r, 700_000);
    await charge(r, r, 100_000, false);
    // boundedBy: the tree ($1.00 − $0.70 − $0.10 = $0.20 left), less than G's own $0.40 and C's $0.50
    const byTree = { limitMicros: 1_000_000, remainingMicros: 200_000 };
    expect(await view(g.id)).toEqual({ rootId: r.id, jobId: g.id, limitMicros: 400_000, spentMicros: 0, reservedMicros: 0, remainingMicros: 200_000, boundedBy: byTree });
    expect(await view(c.id)).toEqual({ rootId: r.id, jobId: c.id, limitMicros: 500_000, spentMicros: 0, reservedMicros: 0, remainingMicros: 200_000, boundedBy: byTree });
    expect(await cliLeft(g.id)).toBe(`left:      $0.200000 (bounded by job tree ${r.id}: $0.200000 left of its own $1.000000)`);
    // the tree's own view is unchanged
    expect(await view(r.id)).toEqual({ rootId: r.id, limitMicros: 1_000_000, spentMicros: 700_000, reservedMicros: 100_000, remainingMicros: 200_000 });
  });

  it("C's sub-limit bounds: C has $0.10 left of $0.30, G $0.25 of its own", async (ctx) => {
    if (!server()) return ctx.skip();
    const { r, c, g } = await tree(300_000, 250_000);
    await charge(r, c, 200_000);
    expect(await view(g.id)).toEqual({ rootId: r.id, jobId: g.id, limitMicros: 250_000, spentMicros: 0, reservedMicros: 0, remainingMicros: 100_000, boundedBy: { jobId: c.id, limitMicros: 300_000, remainingMicros: 100_000 } });
    expect(await cliLeft(g.id)).toBe(`left:      $0.100000 (bounded by job ${c.id}: $0.100000 left of its own $0.300000)`);
  });

  it('G bounds itself: its own left, nothing named', async (ctx) => {
    if (!server()) return ctx.skip();
    const { r, g } = await tree(300_000, 80_000);
    await charge(r, g, 30_000);
    expect(await view(g.id)).toEqual({ rootId: r.id, jobId: g.id, limitMicros: 80_000, spentMicros: 30_000, reservedMicros: 0, remainingMicros: 50_000 });
    expect(await cliLeft(g.id)).toBe('left:      $0.050000');
  });
});
