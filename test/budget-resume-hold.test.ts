/**
 * A job a top-up resumed holds the room of the call it was resumed for until that call is
 * recorded (store/budget-resume.ts resumedNeedHolds, held on the budget rows for the gateway:
 * store/budget-holds.ts): the tester's case — two sharing children
 * paused for budget, a top-up with room for one resumed X; a second top-up of 1 µ$ then resumed
 * Y too, into the room X had not spent yet (X's resumed call or Y's would be refused and pause
 * again). Now the 1 µ$ resumes nothing, the budget view says what Y lacks with X's hold counted,
 * and once X's call is recorded by the gateway (a real upstream call, $0.000180) the hold ends
 * and the room left resumes Y with no further top-up (server/budget-pause.ts resumeHoldEnder).
 * Real server over SQLite, real HTTP, a fake runner, a fake Anthropic upstream in node:http.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BudgetView, Job } from '../src/protocol/index.js';
import { FakeRunner, type TestServer } from '../src/server/test-helpers.js';
import { messagesCall, pauseOnBudget as pauseAll, refused402, startBudgetServer, xHoldsYOut, type Kid } from './budget-pause-helpers.js';

describe('a resumed job holds its room until its call', () => {
  let t: TestServer;
  let upstreamCalls: () => number;
  let close: () => Promise<void>;
  beforeAll(async () => {
    // each upstream call: usage 10 in / 10 out at the test prices ($3 / $15 per million): 30 + 150 = 180 µ$
    ({ t, upstreamCalls, close } = await startBudgetServer());
  });
  afterAll(async () => {
    await close();
  });

  const job = async (id: number) => (await (await t.api(`/api/jobs/${id}`)).json()) as Job;
  const view = async (id: number) => (await (await t.api(`/api/jobs/${id}/budget`)).json()) as BudgetView;
  /** A call of the job holding `token` (budget-pause-helpers.ts messagesCall). */
  const call = (token: string) => messagesCall(t, token);
  /** A $0.10 root and `n` children sharing its tree, all started on `r` (sessions `sess-<id>-<attempt>`); the tree then spent but $0.005, too little for any call. */
  async function tree(r: FakeRunner, n: number): Promise<{ root: Job; kids: Kid[] }> {
    const start = (id: number) => r.startJob(id, (attempt) => `sess-${id}-${attempt}`);
    const root = (await (await t.api('/api/jobs', { json: { agent: 'test-fixer', input: { repo: 'examples/calc' }, budgetUsd: 0.1 } })).json()) as Job;
    const { token } = await start(root.id);
    const kids: Kid[] = [];
    for (let i = 0; i < n; i++) {
      const kid = (await (await t.api('/api/jobs', { token, json: { agent: 'test-fixer', input: { repo: `repos/k${i}` } } })).json()) as Job;
      kids.push({ id: kid.id, token: (await start(kid.id)).token });
    }
    const held = await t.store.reserveBudget(root.id, 95_000, Date.now(), 60_000);
    if (!held?.ok) throw new Error('the $0.095 did not fit');
    await t.store.settleBudget(root.id, held.reservationId, 95_000, Date.now());
    return { root, kids };
  }
  const pauseOnBudget = (r: FakeRunner, jobs: Kid[], finished?: Parameters<typeof pauseAll>[3]) => pauseAll(t, r, jobs, finished);

  it('a 1 µ$ top-up does not resume a sibling into the room a resumed job has not spent; its recorded call frees the rest', async () => {
    const r = await FakeRunner.start(t, { name: 'hold-runner', capacity: 4 });
    await r.hello({ name: 'hold-runner', capacity: 4 });
    // the tree spent but $0.005: a call with max_tokens 1000 ($0.015 of output alone) does not fit
    const { root, kids } = await tree(r, 2);
    const [x, y] = kids as [Kid, Kid];
    await pauseOnBudget(r, kids, refused402);
    expect(upstreamCalls()).toBe(0);
    const needX = (await view(x.id)).resumeNeeds!.needMicros!;
    const needY = (await view(y.id)).resumeNeeds!.needMicros!;
    expect(needX).toBeGreaterThan(15_000);

    // room for X's call exactly: X resumes (the lower id), Y does not
    const topX = (await (await t.api(`/api/jobs/${root.id}/budget`, { json: { addUsd: (needX - 5_000) / 1e6 } })).json()) as BudgetView;
    expect(topX.resumed).toEqual([x.id]);
    const x2 = (await r.next('job.assign', (f) => f.assignment.jobId === x.id, 10_000)).assignment;
    expect(x2.attempt).toBe(2);

    // the tester's 1 µ$: Y stayed paused? It was resumed into X's room. Now it is not.
    const one = (await (await t.api(`/api/jobs/${root.id}/budget`, { json: { addUsd: 0.000001 } })).json()) as BudgetView;
    expect(one.resumed).toEqual([]);
    expect((await job(y.id)).status).toBe('paused');
    // what Y lacks counts X's hold: the tree has needX + 1 µ$ left, X holds needX of it
    expect((await view(y.id)).resumeNeeds).toEqual({ needMicros: needY, short: [{ shortMicros: needY - 1 }] });
    // and so does the refusal Y's old token gets (it said "its budget now covers the call")
    const again = await call(y.token);
    expect(again.status).toBe(402);
    const msg = ((await again.json()) as { error: { message: string } }).error.message;
    expect(msg).toContain(`the job resumes after a top-up of at least $${((needY - 1) / 1e6).toFixed(6)}`);
    expect((await job(y.id)).status).toBe('paused');

    // room for Y only once X's hold is gone: still paused
    const more = (await (await t.api(`/api/jobs/${root.id}/budget`, { json: { addUsd: (needY - 2) / 1e6 } })).json()) as BudgetView;
    expect(more.resumed).toEqual([]);
    expect(await r.none('job.assign', 300)).toBe(true);

    // X makes its call ($0.000180, recorded): its hold ends, and needY − 1 + needX − 180 ≥ needY is left: Y resumes
    const res = await call(x2.token);
    expect(res.status).toBe(200);
    await res.arrayBuffer();
    expect(upstreamCalls()).toBe(1);
    const y2 = (await r.next('job.assign', (f) => f.assignment.jobId === y.id, 10_000)).assignment;
    expect(y2).toMatchObject({ attempt: 2, resumeSessionId: `sess-${y.id}-1` });
    expect((await t.store.getJob(x.id))?.pausedNeedMicros).toBeNull();
    const b = (await view(root.id)).budget;
    expect(b).toMatchObject({ limitMicros: 100_000 + (needX - 5_000) + 1 + (needY - 2), spentMicros: 95_000 + 180 });
    await r.close();
  }, 60_000);

  it('a running sibling cannot spend the room a top-up gave a resumed job: it is refused with the hold named, the resumed job is served', async () => {
    const r = await FakeRunner.start(t, { name: 'sibling-runner', capacity: 4 });
    await r.hello({ name: 'sibling-runner', capacity: 4 });
    const { root, kids } = await tree(r, 2);
    const [x, y] = kids as [Kid, Kid];
    await pauseOnBudget(r, [x], refused402);
    const needX = (await view(x.id)).resumeNeeds!.needMicros!;
    // room for X's call exactly: X resumes; Y, still running, would fit the same call in it
    const top = (await (await t.api(`/api/jobs/${root.id}/budget`, { json: { addUsd: (needX - 5_000) / 1e6 } })).json()) as BudgetView;
    expect(top.resumed).toEqual([x.id]);
    expect(top.budget).toMatchObject({ limitMicros: 100_000 + needX - 5_000, spentMicros: 95_000, heldMicros: needX, remainingMicros: 0 });
    const x2 = (await r.next('job.assign', (f) => f.assignment.jobId === x.id, 10_000)).assignment;
    const before = upstreamCalls();
    // Y's call: refused for budget (the room is X's), not served (fresh tester: it was served, and X paused again at once)
    const ys = await call(y.token);
    expect(ys.status).toBe(402);
    const msg = ((await ys.json()) as { error: { message: string } }).error.message;
    expect(msg).toContain(`$0.095000 spent, $0.000000 reserved by calls in flight and $${(needX / 1e6).toFixed(6)} held for the calls of resumed jobs, $0.000000 left`);
    // the held room alone keeps it out ($0.095 spent + its call fit the limit): it may wait instead of paying
    expect(msg).toMatch(new RegExp(`says the least that resumes this job\\)\\. Or wait: the room held for resumed jobs comes back as each makes its call or ends \\(flotilla budget ${root.id} names them\\), and this job then resumes without a top-up if its call fits\\.$`));
    expect(upstreamCalls()).toBe(before);
    expect(await job(y.id)).toMatchObject({ status: 'paused', endReason: 'budget' });
    // X's call is served: $0.000180 recorded, and its hold ends
    const xs = await call(x2.token);
    expect(xs.status).toBe(200);
    await xs.arrayBuffer();
    expect(upstreamCalls()).toBe(before + 1);
    for (let i = 0; (await view(root.id)).budget.heldMicros !== undefined; i++) {
      if (i > 100) throw new Error('the hold never ended');
      await new Promise((z) => setTimeout(z, 50));
    }
    expect((await view(root.id)).budget).toMatchObject({ spentMicros: 95_000 + 180, reservedMicros: 0, remainingMicros: needX - 5_000 + 5_000 - 180 });
    await r.close();
  }, 60_000);

  it('a resumed job lost with its revoked runner before its call gives its held room back: the sibling it kept out resumes', async () => {
    const { keep, gone, root, x, y, needX } = await xHoldsYOut(t, 'keep-a', 'gone-a');
    // fresh tester: the revoke ended X `lost` with its need cleared, so no hook gave the room back, and Y stayed paused
    expect((await t.api(`/api/runners/${gone.runnerId}/revoke`, { json: {} })).status).toBe(200);
    expect(await job(x.id)).toMatchObject({ status: 'lost', endReason: 'runner_revoked' });
    const y2 = (await keep.next('job.assign', (f) => f.assignment.jobId === y.id, 10_000)).assignment;
    expect(y2).toMatchObject({ attempt: 2, resumeSessionId: `sess-${y.id}-1` });
    // Y now holds the same room X held (the same call: the same need)
    expect((await view(root.id)).budget).toMatchObject({ spentMicros: 95_000, heldMicros: needX, remainingMicros: 0 });
    await keep.close();
  }, 60_000);

  it('a resumed job ended where no hook sees it (a store write, no event): the budget sweep gives its room back and resumes the sibling', async () => {
    const { keep, root, x, y, needX } = await xHoldsYOut(t, 'keep-b', 'gone-b');
    // ended behind the server's back: nothing publishes it
    expect(await t.store.transitionJob(x.id, null, ['queued'], 'cancelled', Date.now())).toMatchObject({ status: 'cancelled' });
    const y2 = (await keep.next('job.assign', (f) => f.assignment.jobId === y.id, 10_000)).assignment;
    expect(y2).toMatchObject({ attempt: 2 });
    expect((await view(root.id)).budget).toMatchObject({ spentMicros: 95_000, heldMicros: needX, remainingMicros: 0 });
    await keep.close();
  }, 60_000);

  it('a job not first in line is told the top-up that resumes it; a resumed job that ends without calling frees its room; a paused job cancelled gets its job.finished', async () => {
    const r = await FakeRunner.start(t, { name: 'line-runner', capacity: 4 });
    await r.hello({ name: 'line-runner', capacity: 4 });
    const { root, kids } = await tree(r, 3);
    const [x, y, z] = kids as [Kid, Kid, Kid];
    await pauseOnBudget(r, kids, refused402);
    const need = (await view(x.id)).resumeNeeds!.needMicros!; // the same request: the same need for each
    // $0.005 left: X is short need − 5,000; Y, behind X, need × 2 − 5,000 (X's need of it ahead); Z need × 3 − 5,000 (X's and Y's)
    expect((await view(x.id)).resumeNeeds!.short).toEqual([{ shortMicros: need - 5_000 }]);
    expect((await view(y.id)).resumeNeeds!.short).toEqual([{ shortMicros: 2 * need - 5_000, aheadMicros: need }]);
    expect((await view(z.id)).resumeNeeds!.short).toEqual([{ shortMicros: 3 * need - 5_000, aheadMicros: 2 * need }]);
    // Y's figure resumes X and Y (it said X's figure, and the top-up resumed X alone: tester finding)
    const top = (await (await t.api(`/api/jobs/${y.id}/budget`, { json: { addUsd: (2 * need - 5_000) / 1e6 } })).json()) as BudgetView;
    expect(top.resumed).toEqual([x.id, y.id]);
    const x2 = (await r.next('job.assign', (f) => f.assignment.jobId === x.id, 10_000)).assignment;
    await r.next('job.assign', (f) => f.assignment.jobId === y.id, 10_000);
    // Z: the room X and Y hold (resumed: no longer paused ahead of it), then its own need
    expect((await view(z.id)).resumeNeeds!.short).toEqual([{ shortMicros: need }]);
    await (await t.api(`/api/jobs/${root.id}/budget`, { json: { addUsd: need / 1e6 - 0.000001 } })).arrayBuffer();
    expect((await job(z.id)).status).toBe('paused');
    // X ends without the call it was resumed for: the room it held is free, Z resumes with no top-up
    r.send({ type: 'job.accepted', jobId: x.id, attempt: x2.attempt });
    await r.events(x.id, x2.attempt, { type: 'job.finished', data: { status: 'succeeded' } });
    await r.next('job.assign', (f) => f.assignment.jobId === z.id, 10_000);
    expect(await job(x.id)).toMatchObject({ status: 'succeeded' });
    await r.close();
  }, 60_000);

  it('a job cancelled while paused for budget ends with its job.finished, the last event of its stream', async () => {
    const r = await FakeRunner.start(t, { name: 'cancel-runner', capacity: 2 });
    await r.hello({ name: 'cancel-runner', capacity: 2 });
    const root = (await (await t.api('/api/jobs', { json: { agent: 'test-fixer', input: { repo: 'examples/calc' }, budgetUsd: 0.001 } })).json()) as Job;
    const { token } = await r.startJob(root.id, (a) => `sess-c-${a}`);
    await pauseOnBudget(r, [{ id: root.id, token }], () => ({ status: 'cancelled', reason: 'cancelled', error: 'paused: job tree out of budget' }));
    expect((await (await t.api(`/api/jobs/${root.id}/cancel`, { json: {} })).json()) as Job).toMatchObject({ status: 'cancelled' });
    const evs = await t.store.listEvents(root.id, 0, 100);
    expect(evs.filter((e) => e.type === 'job.finished' || e.type === 'attempt.ended').map((e) => e.type)).toEqual(['attempt.ended', 'job.finished']);
    expect(evs.at(-1)).toMatchObject({ type: 'job.finished', data: { status: 'cancelled', reason: 'cancelled' } });
    await r.close();
  }, 60_000);
});
