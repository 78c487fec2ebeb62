/**
 * A job a top-up resumed holds the room of its refused call until its call is admitted; when it
 * cannot start (its session's runner gone: a resume is pinned to it), the hold lapses once it has
 * waited the gateway's budgetHoldMs (FLOTILLA_GATEWAY_BUDGET_HOLD_MS; server/budget-sweep.ts,
 * store/budget-holds.ts lapseBudgetHolds), and the sibling it kept paused resumes without a
 * top-up (fresh tester, stop 41: such a hold was kept for as long as the job waited). Real server
 * over SQLite, real HTTP, fake runners; every call here is refused for budget (none reaches the upstream).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BudgetView, Job } from '../src/protocol/index.js';
import type { TestServer } from '../src/server/test-helpers.js';
import { startBudgetServer, xHoldsYOut } from './budget-pause-helpers.js';

/** How long a resumed job may wait to start here before its hold lapses, ms. */
const HOLD_MS = 1500;

describe('the hold of a resumed job that cannot start lapses', () => {
  let t: TestServer;
  let close: () => Promise<void>;
  beforeAll(async () => {
    ({ t, close } = await startBudgetServer({ budgetHoldMs: HOLD_MS }));
  });
  afterAll(async () => {
    await close();
  });

  const job = async (id: number) => (await (await t.api(`/api/jobs/${id}`)).json()) as Job;
  const view = async (id: number) => (await (await t.api(`/api/jobs/${id}/budget`)).json()) as BudgetView;
  it('a resumed job pinned to a runner that is gone gives its room back after budgetHoldMs; the sibling it kept out resumes; it stays queued', async () => {
    // X resumed, queued, pinned to a runner that is not coming back; Y refused for the room X holds, paused
    const { keep, root, x, y, needX, resumedAt } = await xHoldsYOut(t, 'keep', 'gone');

    // after HOLD_MS the sweep lets X's hold lapse: Y resumes in its session, with no top-up
    const y2 = (await keep.next('job.assign', (f) => f.assignment.jobId === y.id, 15_000)).assignment;
    expect(Date.now() - resumedAt).toBeGreaterThanOrEqual(HOLD_MS);
    expect(y2).toMatchObject({ attempt: 2, resumeSessionId: `sess-${y.id}-1` });
    // X still waits for its runner, holding nothing; Y now holds the same room (the same call: the same need)
    expect(await job(x.id)).toMatchObject({ status: 'queued' });
    expect((await t.store.getJob(x.id))?.pausedNeedMicros).toBeNull();
    const v = await view(root.id);
    expect(v.budget).toMatchObject({ spentMicros: 95_000, heldMicros: needX, remainingMicros: 0 });
    // (assigned by now, as a rule; on a loaded machine the view may still read it queued: then with the time its own hold lapses)
    const y3 = v.holders?.[0];
    expect(y3).toEqual({ jobId: y.id, status: y3?.status, heldMicros: needX, ...(y3?.status === 'queued' ? { lapsesAt: new Date((await t.store.getJob(y.id))!.resumedAt! + HOLD_MS).toISOString() } : {}) });
    expect(v.holders).toHaveLength(1);
    // X's events say why
    const lapsed = (await t.store.listEvents(x.id, 0, 500)).flatMap((e) => (e.type === 'status' && e.data.status === 'queued' ? [e.data.message] : [])).at(-1);
    expect(lapsed).toBe(`not started 2 s after its resume: the budget room it held for its call is given back to its tree (FLOTILLA_GATEWAY_BUDGET_HOLD_MS); still queued, its next call is reserved as any job's`);
    await keep.close();
  }, 60_000);
});
