/**
 * A job a top-up resumed holds the room of its refused call until its call is admitted; when it
 * cannot start (its session's runner gone: a resume is pinned to it), the hold lapses once it has
 * waited the gateway's budgetHoldMs (FLOTILLA_GATEWAY_BUDGET_HOLD_MS; server/budget-sweep.ts,
 * store/budget-holds.ts lapseBudgetHolds), and the sibling it kept paused resumes without a
 * top-up (fresh tester, stop 41: such a hold was kept for as long as the job waited). Real server
 * over SQLite, real HTTP, fake runners; every call here is refused for budget (no upstream).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BudgetView, Job } from '../src/protocol/index.js';
import { FakeRunner, startTestServer, TEST_GATEWAY, type TestServer } from '../src/server/test-helpers.js';
import { pauseOnBudget } from './budget-pause-helpers.js';

/** How long a resumed job may wait to start here before its hold lapses, ms. */
const HOLD_MS = 1500;

describe('the hold of a resumed job that cannot start lapses', () => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer({ dispatchIntervalMs: 100, sweepIntervalMs: 200, budgetSweepIntervalMs: 0, gateway: { ...TEST_GATEWAY, budgetHoldMs: HOLD_MS } });
  });
  afterAll(async () => {
    await t.close();
  });

  const job = async (id: number) => (await (await t.api(`/api/jobs/${id}`)).json()) as Job;
  const view = async (id: number) => (await (await t.api(`/api/jobs/${id}/budget`)).json()) as BudgetView;
  it('a resumed job pinned to a runner that is gone gives its room back after budgetHoldMs; the sibling it kept out resumes; it stays queued', async () => {
    const keep = await FakeRunner.start(t, { name: 'keep', labels: { box: 'one' }, capacity: 4 });
    await keep.hello({ name: 'keep', labels: { box: 'one' }, capacity: 4 });
    const gone = await FakeRunner.start(t, { name: 'gone', labels: { box: 'two' }, capacity: 2 });
    await gone.hello({ name: 'gone', labels: { box: 'two' }, capacity: 2 });
    const start = (fr: FakeRunner, id: number) => fr.startJob(id, (attempt) => `sess-${id}-${attempt}`);
    const root = (await (await t.api('/api/jobs', { json: { agent: 'test-fixer', input: { repo: 'examples/calc' }, labels: { box: 'one' }, budgetUsd: 0.1 } })).json()) as Job;
    const { token } = await start(keep, root.id);
    const kid = async (fr: FakeRunner, box: string) => {
      const j = (await (await t.api('/api/jobs', { token, json: { agent: 'test-fixer', input: { repo: 'repos/k' }, labels: { box } } })).json()) as Job;
      return { id: j.id, token: (await start(fr, j.id)).token };
    };
    const y = await kid(keep, 'one');
    const x = await kid(gone, 'two');
    // $0.095 of the $0.10 spent: no call fits
    const spent = await t.store.reserveBudget(root.id, 95_000, Date.now(), 60_000);
    await t.store.settleBudget(root.id, spent!.reservationId!, 95_000, Date.now());
    await pauseOnBudget(t, gone, [x]);
    await gone.close();
    const needX = (await view(x.id)).resumeNeeds!.needMicros!;
    // room for X's call exactly: X resumes, queued, pinned to `gone`, which is not coming back
    const top = (await (await t.api(`/api/jobs/${root.id}/budget`, { json: { addUsd: (needX - 5_000) / 1e6 } })).json()) as BudgetView;
    expect(top.resumed).toEqual([x.id]);
    const resumedAt = Date.now();
    // Y's call falls in the room X holds: refused, Y paused
    await pauseOnBudget(t, keep, [y]);
    expect((await view(root.id)).budget).toMatchObject({ heldMicros: needX, remainingMicros: 0 });

    // after HOLD_MS the sweep lets X's hold lapse: Y resumes in its session, with no top-up
    const y2 = (await keep.next('job.assign', (f) => f.assignment.jobId === y.id, 15_000)).assignment;
    expect(Date.now() - resumedAt).toBeGreaterThanOrEqual(HOLD_MS);
    expect(y2).toMatchObject({ attempt: 2, resumeSessionId: `sess-${y.id}-1` });
    // X still waits for its runner, holding nothing; Y now holds the same room (the same call: the same need)
    expect(await job(x.id)).toMatchObject({ status: 'queued' });
    expect((await t.store.getJob(x.id))?.pausedNeedMicros).toBeNull();
    const v = await view(root.id);
    expect(v.budget).toMatchObject({ spentMicros: 95_000, heldMicros: needX, remainingMicros: 0 });
    expect(v.holders).toEqual([{ jobId: y.id, status: expect.any(String), heldMicros: needX }]);
    // X's events say why
    const lapsed = (await t.store.listEvents(x.id, 0, 500)).filter((e) => e.type === 'status' && e.data.status === 'queued').at(-1);
    expect(lapsed?.data.message).toBe(`not started 2 s after its resume: the budget room it held for its call is given back to its tree (FLOTILLA_GATEWAY_BUDGET_HOLD_MS); still queued, its next call is reserved as any job's`);
    await keep.close();
  }, 60_000);
});
