/**
 * A job holding room for the call a top-up resumed it for reads that room as its own (its calls
 * may use it; store/budget-holds.ts): its budget view says how much of what it has left is its own
 * hold (`ownHeldMicros`), and a refused top-up of its sub-limit names the held room it does not
 * count as left (fresh tester, stop 42: "$0 left" beside a view showing room, with nothing to tie
 * the two). Real server over SQLite, real HTTP, fake runners; every call here is refused for
 * budget (none reaches the upstream).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BudgetView, Job } from '../src/protocol/index.js';
import { FakeRunner, type TestServer } from '../src/server/test-helpers.js';
import { pauseOnBudget, startBudgetServer, xHoldsYOut } from './budget-pause-helpers.js';

describe("a holder's own room", () => {
  let t: TestServer;
  let close: () => Promise<void>;
  beforeAll(async () => {
    ({ t, close } = await startBudgetServer());
  });
  afterAll(async () => {
    await close();
  });
  const view = async (id: number) => (await (await t.api(`/api/jobs/${id}/budget`)).json()) as BudgetView;

  it("the holder's view gives its own hold, counted in what it has left; the others' views do not", async () => {
    const { keep, root, x, y, needX } = await xHoldsYOut(t, 'own-keep', 'own-gone');
    // X's view: $0.10 + (needX − $0.005) limit, $0.095 spent, needX held by X itself → needX left, all of it its own
    const vx = await view(x.id);
    expect(vx.budget).toMatchObject({ limitMicros: 100_000 + needX - 5_000, spentMicros: 95_000, reservedMicros: 0, remainingMicros: needX });
    expect(vx.budget.heldMicros).toBeUndefined();
    expect(vx.ownHeldMicros).toBe(needX);
    // the root's and Y's: the same room is held by another job, nothing left, no own hold
    for (const id of [root.id, y.id]) {
      const v = await view(id);
      expect(v.budget).toMatchObject({ heldMicros: needX, remainingMicros: 0 });
      expect(v.ownHeldMicros).toBeUndefined();
    }
    await keep.close();
  }, 60_000);

  it('a refused top-up of a holding sub-limit names the held room beside the $0 it has left', async () => {
    const gone = await FakeRunner.start(t, { name: 'sub-gone', labels: { box: 'three' }, capacity: 2 });
    await gone.hello({ name: 'sub-gone', labels: { box: 'three' }, capacity: 2 });
    const start = (id: number) => gone.startJob(id, (attempt) => `sess-${id}-${attempt}`);
    // a $1 tree; child C with a $0.02 sub-limit, $0.015 of it spent: its call (worst case over $0.015) is refused
    const root = (await (await t.api('/api/jobs', { json: { agent: 'test-fixer', input: { repo: 'examples/calc' }, labels: { box: 'three' }, budgetUsd: 1 } })).json()) as Job;
    const { token: rootToken } = await start(root.id);
    const c = (await (await t.api('/api/jobs', { token: rootToken, json: { agent: 'test-fixer', input: { repo: 'repos/c' }, labels: { box: 'three' }, budgetUsd: 0.02 } })).json()) as Job;
    const { token } = await start(c.id);
    const spent = await t.store.reserveBudget(root.id, 15_000, Date.now(), 60_000, c.id);
    if (!spent?.ok) throw new Error('the $0.015 did not fit');
    await t.store.settleBudget(root.id, spent.reservationId, 15_000, Date.now());
    await pauseOnBudget(t, gone, [{ id: c.id, token }]);
    await gone.close();
    // topped up by its need less the $0.005 left: C resumes (queued, its runner gone) and holds its need on both budgets
    const need = (await view(c.id)).resumeNeeds!.needMicros!;
    const top = (await (await t.api(`/api/jobs/${c.id}/budget`, { json: { addUsd: (need - 5_000) / 1e6 } })).json()) as BudgetView;
    expect(top.resumed).toEqual([c.id]);
    const vc = await view(c.id);
    expect(vc.budget).toMatchObject({ jobId: c.id, limitMicros: 15_000 + need, spentMicros: 15_000, remainingMicros: need });
    expect(vc.ownHeldMicros).toBe(need);
    // $5 more than the tree has: refused, and the words say the need is held, not left, on both
    const treeLeft = 1_000_000 - 15_000 - need;
    const usd = (m: number) => `$${(m / 1e6).toFixed(6)}`;
    const refused = await t.api(`/api/jobs/${c.id}/budget`, { json: { addUsd: 5 } });
    expect(refused.status).toBe(422);
    expect(((await refused.json()) as { error: { message: string } }).error.message).toBe(
      `addUsd: job ${c.id}'s sub-limit can grow by at most ${usd(treeLeft)}: job tree ${root.id}'s budget has ${usd(treeLeft)} left and job ${c.id}'s own has $0.000000 left (room held for resumed jobs' calls is not left: ${usd(need)} on job tree ${root.id}'s budget, ${usd(need)} on job ${c.id}'s own); top up the tree first: flotilla budget ${root.id} --add <USD>`,
    );
    // nothing changed
    expect((await view(c.id)).budget.limitMicros).toBe(15_000 + need);
  }, 60_000);
});
