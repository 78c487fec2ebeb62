/**
 * Which budget-paused jobs a top-up resumes (store/budget-resume.ts), over real HTTP against a
 * real control plane (SQLite, the gateway's scripted model) with a fake runner, and the built
 * CLI as a child process for `flotilla budget JOB --add USD`:
 * the tester's tree — child A (sub-limit $0.03, $0.0096 left, its call needs more) and child B
 * (sub-limit $0.01, spent) both paused; a resume needs room for the refused call grown by 8 KiB
 * of input (a resumed harness sends its prompt again). Topping up B's sub-limit resumes B only (`resumed: job
 * B`); A stays paused with its sub-limit unchanged. Topping up the tree does not resume A (its
 * own sub-limit still lacks room for its call); topping up A's sub-limit by 1 µ$ less than its
 * call needs leaves it paused, by exactly enough resumes it.
 * And the tree as the blocker: a sharing child C and a sub-limited child D paused; topping up
 * the tree resumes C, not D (D's sub-limit is spent); topping up D by room for one call resumes
 * D, not its paused child E too (E's path holds D's sub-limit: the two fit only one after the
 * other), and a second such top-up resumes E; never C again.
 * Needs `npx tsc -p tsconfig.build.json` first (bin/flotilla.js runs dist/).
 */
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { BudgetView, Job } from '../src/protocol/index.js';
import { FakeRunner, startTestServer, type TestServer } from '../src/server/test-helpers.js';
import { runFlotilla } from './helpers.js';


describe('a top-up resumes only the paused jobs its budget gave room', () => {
  let t: TestServer;
  let r: FakeRunner;
  beforeAll(async () => {
    t = await startTestServer({ dispatchIntervalMs: 100 });
  });
  afterAll(async () => {
    await t.close();
  });
  // each test its own runner (at most 4 slots), closed at its end
  let n = 0;
  beforeEach(async () => {
    const name = `resume-runner-${++n}`;
    r = await FakeRunner.start(t, { name, capacity: 4 });
    await r.hello({ name, capacity: 4 });
  });
  afterEach(() => r.close());

  /** Runs the built CLI against the test server; stdout, stderr and exit code. */
  const cli = (args: string[]) => runFlotilla([...args, '--server', t.url, '--token', t.admin], { FLOTILLA_LOG_LEVEL: 'error' });
  /** Takes the assignment of job `id` (any attempt), starts it with session `sess-<id>-<attempt>`; its token. */
  const start = (id: number) => r.startJob(id, (attempt) => `sess-${id}-${attempt}`);
  const job = async (id: number) => (await (await t.api(`/api/jobs/${id}`)).json()) as Job;
  const budget = async (id: number) => ((await (await t.api(`/api/jobs/${id}/budget`)).json()) as BudgetView).budget;
  /** Charges `micros` to job `id`'s path (its tree and sub-limits), as a settled model call does. */
  async function spend(rootId: number, id: number, micros: number) {
    const res = await t.store.reserveBudget(rootId, micros, Date.now(), 60_000, id);
    if (!res?.ok) throw new Error(`could not reserve ${micros} for job ${id}`);
    await t.store.settleBudget(rootId, res.reservationId, micros, Date.now());
  }
  /**
   * A model call of job `id` that does not fit: 402, the job paused for budget, its runner
   * reports the attempt ended (the process is gone). @returns what its resume needs, µ$: the
   * refused call's worst case as the refusal states it (⌈bytes / 3⌉ input tokens at sonnet's
   * dearest input rate, the 1-hour cache write's $6/MTok, + max_tokens at $15), grown by 8 KiB
   * of input for the resumed harness's larger request (gateway/worst-case.ts RESUME_GROWTH_BYTES).
   */
  async function refuse(id: number, token: string, attempt: number, maxTokens: number): Promise<number> {
    const sent = JSON.stringify({ model: 'claude-sonnet-4-5', max_tokens: maxTokens, messages: [{ role: 'user', content: 'fix it' }] });
    const res = await fetch(t.url + '/v1/messages', {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': token, 'anthropic-version': '2023-06-01' },
      body: sent,
    });
    const body = (await res.json()) as { error: { message: string } };
    expect([res.status, body.error.message]).toEqual([402, expect.stringContaining('budget exhausted')]);
    expect(await job(id)).toMatchObject({ status: 'paused', endReason: 'budget', attempt });
    await r.events(id, attempt, { type: 'job.finished', data: { status: 'failed', reason: 'budget', error: 'API Error: 402', sessionId: `sess-${id}-${attempt}` } });
    await r.next('job.cancel', (f) => f.jobId === id, 10_000);
    // its slot freed (paused-exit.ts): a top-up now requeues it at once rather than on its exit
    for (let i = 0; (await t.store.getJob(id))?.finishedAt === null; i++) {
      if (i > 100) throw new Error(`job ${id}'s paused attempt never ended`);
      await new Promise((res) => setTimeout(res, 50));
    }
    const m = /this call may cost up to \$(\d+)\.(\d{6})/.exec(body.error.message)!;
    const bytes = Buffer.byteLength(sent);
    expect(Number(m[1]) * 1_000_000 + Number(m[2])).toBe(Math.ceil(bytes / 3) * 6 + maxTokens * 15);
    return Math.ceil((bytes + 8192) / 3) * 6 + maxTokens * 15;
  }
  const usd = (micros: number) => (micros / 1_000_000).toFixed(6);

  async function rootJob(budgetUsd: number) {
    const root = (await (await t.api('/api/jobs', { json: { agent: 'test-fixer', input: { repo: 'examples/calc' }, budgetUsd } })).json()) as Job;
    const { token } = await start(root.id);
    const child = async (parentToken: string, body: Record<string, unknown>) => {
      const res = await t.api('/api/jobs', { token: parentToken, json: { agent: 'test-fixer', input: { repo: 'repos/api' }, ...body } });
      expect(res.status).toBe(201);
      const j = (await res.json()) as Job;
      return { ...j, ...(await start(j.id)) };
    };
    return { root, token, child };
  }

  it("topping up a child's sub-limit resumes it, not a sibling whose own sub-limit still lacks room", async () => {
    const { root, token, child } = await rootJob(1);
    const a = await child(token, { budgetUsd: 0.03 });
    const b = await child(token, { budgetUsd: 0.01 });
    await spend(root.id, a.id, 20_400); // A: $0.03 - $0.0204 = $0.0096 left
    await spend(root.id, b.id, 10_000); // B: nothing left
    const needA = await refuse(a.id, a.token, 1, 700);
    expect(needA).toBeGreaterThan(9_600); // A's call does not fit its $0.0096
    const needB = await refuse(b.id, b.token, 1, 100);
    expect(needB).toBeLessThanOrEqual(20_000); // B's fits once $0.02 is added

    const topB = await cli(['budget', String(b.id), '--add', '0.02']);
    expect(topB.err).toBe('');
    expect(topB.code).toBe(0);
    expect(topB.out.split('\n').filter((l) => l.startsWith('resumed:'))).toEqual([`resumed:   job ${b.id}`]);
    // B goes back to its runner in its session; A stays paused, attempt 1, its sub-limit as it was.
    const b2 = await r.next('job.assign', (f) => f.assignment.jobId === b.id, 10_000);
    expect(b2.assignment).toMatchObject({ attempt: 2, resumeSessionId: `sess-${b.id}-1` });
    expect(await job(a.id)).toMatchObject({ status: 'paused', endReason: 'budget', attempt: 1 });
    expect(await budget(a.id)).toMatchObject({ jobId: a.id, limitMicros: 30_000, spentMicros: 20_400, remainingMicros: 9_600 });
    expect(await r.none('job.assign', 300)).toBe(true);

    // The tree's top-up gives A nothing: its own sub-limit still has $0.0096 for a call that needs more.
    const topTree = await cli(['budget', String(root.id), '--add', '0.5']);
    expect(topTree.code).toBe(0);
    expect(topTree.out).not.toMatch(/^resumed:/m);
    expect(topTree.out).toContain(`added $0.500000 to job tree ${root.id}`);
    expect(await job(a.id)).toMatchObject({ status: 'paused', attempt: 1 });

    // A's sub-limit 1 µ$ short of its call: still paused; exactly enough: resumed.
    const short = (await (await t.api(`/api/jobs/${a.id}/budget`, { json: { addUsd: Number(usd(needA - 9_600 - 1)) } })).json()) as BudgetView;
    expect(short).toMatchObject({ budget: { remainingMicros: needA - 1 }, resumed: [] });
    expect(await job(a.id)).toMatchObject({ status: 'paused', attempt: 1 });
    const topA = await cli(['budget', String(a.id), '--add', '0.000001']);
    expect(topA.code).toBe(0);
    expect(topA.out).toContain(`added $0.000001 to job ${a.id}'s sub-limit`);
    expect(topA.out.split('\n').filter((l) => l.startsWith('resumed:'))).toEqual([`resumed:   job ${a.id}`]);
    const a2 = await r.next('job.assign', (f) => f.assignment.jobId === a.id, 10_000);
    expect(a2.assignment).toMatchObject({ attempt: 2, resumeSessionId: `sess-${a.id}-1` });
    // the room of its call is held for it until the call is made (store/budget-holds.ts): its own view counts it as left for it
    expect(await budget(a.id)).toMatchObject({ limitMicros: 30_000 + needA - 9_600, spentMicros: 20_400, remainingMicros: needA });
    expect((await budget(a.id)).heldMicros).toBeUndefined();
    // B, resumed before and not called yet, holds room too (its need on the tree's budget)
    expect(((await (await t.api(`/api/jobs/${a.id}/budget`)).json()) as BudgetView).holders?.map((h) => h.jobId)).toEqual([a.id, b.id].sort((x, y) => x - y));
    expect(((await (await t.api(`/api/jobs/${a.id}/budget`)).json()) as BudgetView).holders).toContainEqual({ jobId: a.id, status: expect.stringMatching(/^(queued|assigned)$/), heldMicros: needA });
  });

  it("topping up the tree resumes the jobs whose sub-limits have room; a sub-limit's top-up resumes its job and its descendants as far as they fit together", async () => {
    const { root, token, child } = await rootJob(0.05);
    const c = await child(token, {}); // shares the tree's budget
    const d = await child(token, { budgetUsd: 0.02 });
    const e = await child(d.token, {}); // D's child: D's sub-limit is on its path
    await spend(root.id, d.id, 20_000); // D's sub-limit spent (the tree: $0.03 left)
    await spend(root.id, c.id, 30_000); // the tree spent
    await refuse(c.id, c.token, 1, 100);
    await refuse(d.id, d.token, 1, 100);
    await refuse(e.id, e.token, 1, 100);

    const topTree = (await (await t.api(`/api/jobs/${root.id}/budget`, { json: { addUsd: 0.05 } })).json()) as BudgetView;
    expect(topTree.resumed).toEqual([c.id]);
    expect((await r.next('job.assign', (f) => f.assignment.jobId === c.id, 10_000)).assignment).toMatchObject({ attempt: 2, resumeSessionId: `sess-${c.id}-1` });
    expect([(await job(d.id)).status, (await job(e.id)).status]).toEqual(['paused', 'paused']);

    // $0.02 on D's sub-limit is room for one of D's and E's calls (each ~$0.018), not both:
    // D resumes (the lower id), E stays paused (both resumed before, and E was refused at once)
    const topD = await cli(['budget', String(d.id), '--add', '0.02']);
    expect(topD.code).toBe(0);
    expect(topD.out.split('\n').filter((l) => l.startsWith('resumed:'))).toEqual([`resumed:   job ${d.id}`]);
    expect((await r.next('job.assign', (f) => f.assignment.jobId === d.id, 10_000)).assignment).toMatchObject({ attempt: 2, resumeSessionId: `sess-${d.id}-1` });
    expect((await job(e.id)).status).toBe('paused');
    // C and D make the calls they were resumed for: until then they hold the tree's room for
    // them (budget-resume.ts resumedNeedHolds; the gateway ends a hold once the call is
    // recorded, test/budget-resume-hold.test.ts), here ended as the gateway's hook does
    for (const id of [c.id, d.id]) expect(await t.store.endBudgetResumeHold(id)).toBe(root.id);
    // another $0.02 there (through E, which uses D's sub-limit): E resumes
    const topE = await cli(['budget', String(e.id), '--add', '0.02']);
    expect(topE.out.split('\n').filter((l) => l.startsWith('resumed:'))).toEqual([`resumed:   job ${e.id}`]);
    expect((await r.next('job.assign', (f) => f.assignment.jobId === e.id, 10_000)).assignment).toMatchObject({ attempt: 2, resumeSessionId: `sess-${e.id}-1` });
  });
});
