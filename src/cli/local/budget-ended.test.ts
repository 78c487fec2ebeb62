import { expect, it } from 'vitest';
import type { JobRow } from '../../store/types.js';
import { budgetServerSuites, T } from './test-budget-server.js';

/**
 * A top-up nothing can spend any more is refused (409 `job_ended`), for a sub-limit as for the
 * tree of an ended root: the sub-limit of an ended child job, even while its parent and siblings
 * run (a sub-limit applies only to its child and that child's descendants; server/budget-ended.ts).
 * A top-up through an ended job that uses a live ancestor's budget is still taken. And the
 * budget view's `resumeNeeds` reads the need the pause stored (`jobs.paused_need_micros`, carried
 * by JobRow.pausedNeedMicros), not the pause message. Real server, store (SQLite, and PostgreSQL
 * when reachable) and CLI; trees R ($1.00) → C (sub-limit $0.60) → G (none of its own) / D (its
 * own $0.30).
 */
budgetServerSuites(({ server, job, tree, charge, view, cli }) => {
  /** Job `j` (queued) assigned, then running. */
  const run = async (j: JobRow) => {
    const store = server()!.store;
    expect(await store.transitionJob(j.id, null, ['queued'], 'assigned', T)).not.toBeNull();
    return (await store.transitionJob(j.id, null, ['assigned'], 'running', T, { startedAt: T }))!;
  };
  const succeed = async (j: JobRow) => {
    const running = await run(j);
    expect(await server()!.store.transitionJob(j.id, running.attempt, ['running'], 'succeeded', T)).not.toBeNull();
  };
  const cancel = async (j: JobRow) => expect(await server()!.store.transitionJob(j.id, null, ['queued'], 'cancelled', T, { endReason: 'cancelled' })).not.toBeNull();
  const topUp = (id: number, addUsd: number) => server()!.api(`/api/jobs/${id}/budget`, { json: { addUsd } });
  const limits = async (...ids: number[]) => Promise.all(ids.map(async (id) => (await server()!.store.getJobBudget(id, T))?.limitMicros));

  it("the sub-limit of an ended child takes no top-up while its parent and siblings run: 409, and the CLI fails saying why", async (ctx) => {
    const t = server();
    if (!t) return ctx.skip();
    const { r, c, g, d } = await tree();
    const h = await job(d.id, 0); // uses D's sub-limit; an orphan once D ends
    await succeed(d);
    const refusal = `job ${d.id} has ended (succeeded): its sub-limit applies only to it and its descendants, which spend nothing more, so it takes no top-up; the budget above it still takes one: job ${c.id}'s sub-limit (flotilla budget ${c.id} --add <USD>)`;
    const res = await topUp(d.id, 0.1);
    expect(res.status).toBe(409);
    expect(await res.json()).toEqual({ error: { code: 'job_ended', message: refusal } });

    const add = await cli('budget', String(d.id), '--add', '2');
    expect(add.code).not.toBe(0);
    expect(add.err).toContain(refusal);
    expect(add.out).not.toContain('added');

    // asked through a job that uses D's sub-limit: refused naming D
    const through = await topUp(h.id, 0.1);
    expect(through.status).toBe(409);
    expect(((await through.json()) as { error: { message: string } }).error.message).toBe(
      `job ${d.id} (whose sub-limit job ${h.id} uses) has ended (succeeded): its sub-limit applies only to it and its descendants, which spend nothing more, so it takes no top-up; the budget above it still takes one: job ${c.id}'s sub-limit (flotilla budget ${c.id} --add <USD>)`,
    );
    // nothing changed
    expect(await limits(d.id, c.id)).toEqual([300_000, 600_000]);
    expect((await t.store.getTreeBudget(r.id, T))?.limitMicros).toBe(1_000_000);
    // the budget the running parent (and G) use still takes one
    const parent = await cli('budget', String(c.id), '--add', '0.1');
    expect([parent.code, parent.err]).toEqual([0, '']);
    expect(await limits(c.id)).toEqual([700_000]);
    expect((await t.store.getJob(g.id))?.status).toBe('queued');
  });

  it("an ended child of the root with its own sub-limit: 409 pointing at the tree's budget", async (ctx) => {
    const t = server();
    if (!t) return ctx.skip();
    const r = await job(null, 1_000_000);
    const e = await job(r.id, 200_000);
    await job(r.id, 0); // a sibling still queued
    await cancel(e);
    const res = await topUp(e.id, 0.1);
    expect(res.status).toBe(409);
    expect(await res.json()).toEqual({
      error: {
        code: 'job_ended',
        message: `job ${e.id} has ended (cancelled): its sub-limit applies only to it and its descendants, which spend nothing more, so it takes no top-up; the budget above it still takes one: job tree ${r.id}'s (flotilla budget ${r.id} --add <USD>)`,
      },
    });
    expect(await limits(e.id)).toEqual([200_000]);
  });

  it("an ended job that uses a live ancestor's sub-limit, or the live tree's budget, still tops that up", async (ctx) => {
    const t = server();
    if (!t) return ctx.skip();
    const { r, c, g } = await tree();
    await cancel(g);
    const res = await topUp(g.id, 0.1);
    expect(res.status).toBe(200);
    expect(await limits(c.id)).toEqual([700_000]);
    const x = await job(r.id, 0);
    await succeed(x);
    const add = await cli('budget', String(x.id), '--add', '0.5');
    expect([add.code, add.err]).toEqual([0, '']);
    expect((await t.store.getTreeBudget(r.id, T))?.limitMicros).toBe(1_500_000);
  });

  it('resumeNeeds reads the need the pause stored, not the pause message', async (ctx) => {
    const t = server();
    if (!t) return ctx.skip();
    const { r, c, d } = await tree();
    const d2 = await job(c.id, 300_000);
    await charge(r, c, 500_000); // C: $0.10 left of $0.60
    // a reason in another wording, naming no amount; one naming another amount than the stored need
    const a = await run(d);
    expect(await t.store.pauseJobForBudget(d.id, a.attempt, `budget exhausted: job ${d.id} is out of money (a later wording)`, T, 200_000)).toMatchObject({ pausedNeedMicros: 200_000 });
    const b = await run(d2);
    expect(await t.store.pauseJobForBudget(d2.id, b.attempt, 'budget exhausted: ...; this call may cost up to $0.000050. Top up with: ...', T, 200_000)).not.toBeNull();
    expect((await t.store.getJob(d.id))?.pausedNeedMicros).toBe(200_000);
    expect((await t.store.getJob(d2.id))?.pausedNeedMicros).toBe(200_000);
    expect((await view(d.id)).resumeNeeds).toEqual({ needMicros: 200_000, short: [{ jobId: c.id, shortMicros: 100_000 }] });
    // D2 is behind D in line (a top-up resumes the lower id first): C's sub-limit needs room for both, D's $0.20 of it ahead
    expect((await view(d2.id)).resumeNeeds).toEqual({ needMicros: 200_000, short: [{ jobId: c.id, shortMicros: 300_000, aheadMicros: 200_000 }] });
    // the CLI says the same: C's sub-limit is short by $0.10
    const one = await cli('budget', String(d.id));
    expect(one.out).toContain(`its refused call, sent again on resuming (up to $0.200000) does not fit job ${c.id}'s sub-limit (short by $0.100000)`);
  });
});
