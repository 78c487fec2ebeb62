import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import type { BudgetView, Job } from '../src/protocol/index.js';
import { describeJob } from '../src/cli/commands/jobs.js';
import { describeTree } from '../src/cli/tree-format.js';
import { FlotillaClient } from '../src/client/index.js';
import { FakeRunner, startTestServer, type TestServer } from '../src/server/test-helpers.js';

/**
 * Issue 6 over the real HTTP API (SQLite): `GET/POST /api/jobs/:id/budget` on a child shows
 * and tops up its own sub-limit (never past what the tree has left); a child sharing the
 * tree's budget shows and tops up the tree's, one under a sub-limited parent the parent's;
 * `jobs show CHILD` names the budget it uses and
 * `--tree` on a child says it is a subtree.
 */
describe('child budgets over the API', () => {
  let t: TestServer;
  let r: FakeRunner;
  beforeAll(async () => {
    t = await startTestServer({ dispatchIntervalMs: 100 });
    r = await FakeRunner.start(t, { name: 'sub-runner', capacity: 4 });
    await r.hello({ name: 'sub-runner', capacity: 4 });
  });
  afterAll(async () => {
    await r.close();
    await t.close();
  });

  it('a sub-limited child tops up its own budget within the tree; a sharing child shows the tree', async () => {
    const res = await t.api('/api/jobs', { json: { agent: 'test-fixer', input: { repo: 'examples/calc' }, budgetUsd: 1 } });
    const p = (await res.json()) as Job;
    const a = await r.next('job.assign', (f) => f.assignment.jobId === p.id, 10_000);
    r.send({ type: 'job.accepted', jobId: p.id, attempt: a.assignment.attempt });
    r.send({ type: 'job.events', jobId: p.id, attempt: a.assignment.attempt, events: [{ rseq: 1, at: new Date().toISOString(), type: 'harness.started', data: { harness: 'claude-code', pid: 1 } }] });
    await r.next('ack', () => true, 10_000);
    const token = a.assignment.token;
    const mk = async (body: Record<string, unknown>) => (await (await t.api('/api/jobs', { token, json: { agent: 'test-fixer', input: { repo: 'repos/api' }, ...body } })).json()) as Job;
    const limited = await mk({ budgetUsd: 0.1 });
    const sharing = await mk({});
    const admin = new FlotillaClient({ url: t.url, token: t.admin });

    const own = (await (await t.api(`/api/jobs/${limited.id}/budget`)).json()) as BudgetView;
    expect(own).toEqual({ jobId: limited.id, budget: { rootId: p.id, jobId: limited.id, limitMicros: 100_000, spentMicros: 0, reservedMicros: 0, remainingMicros: 100_000 }, resumed: [], pausedJobs: [], jobStatus: expect.stringMatching(/^(queued|assigned)$/) });
    // tree left $1.00, child left $0.10: at most $0.90 more
    const tooMuch = await t.api(`/api/jobs/${limited.id}/budget`, { json: { addUsd: 0.95 } });
    expect(tooMuch.status).toBe(422);
    expect(await tooMuch.json()).toMatchObject({ error: { code: 'budget_exceeded', field: 'addUsd', message: expect.stringContaining('at most $0.900000') } });
    const up = (await (await t.api(`/api/jobs/${limited.id}/budget`, { json: { addUsd: 0.4 } })).json()) as BudgetView;
    expect(up.budget).toEqual({ rootId: p.id, jobId: limited.id, limitMicros: 500_000, spentMicros: 0, reservedMicros: 0, remainingMicros: 500_000 });
    expect((await t.store.getTreeBudget(p.id, Date.now()))?.limitMicros).toBe(1_000_000); // the tree is unchanged

    const shared = (await (await t.api(`/api/jobs/${sharing.id}/budget`)).json()) as BudgetView;
    expect(shared.budget).toEqual({ rootId: p.id, limitMicros: 1_000_000, spentMicros: 0, reservedMicros: 0, remainingMicros: 1_000_000 });

    // what `flotilla jobs show CHILD` prints
    expect(describeJob(await admin.getJob(sharing.id), await admin.getBudget(sharing.id))).toMatch(/^budget: {4}\$1\.000000 \(shared with job tree \d+, \$1\.000000 left\)$/m);
    expect(describeJob(await admin.getJob(limited.id), await admin.getBudget(limited.id))).toMatch(/^budget: {4}\$0\.500000 \(sub-limit within job tree \d+, \$0\.500000 left\)$/m);
    expect(describeTree(await admin.getJobTree(limited.id))).toMatch(new RegExp(`^subtree of job ${limited.id} \\(in job tree ${p.id}\\): 1 job`));
    expect(describeTree(await admin.getJobTree(p.id))).toMatch(new RegExp(`^job tree ${p.id}: 3 jobs`));
  });

  it("a grandchild's sub-limit is checked against the least room on its parent's path, naming the budget that bounds it", async () => {
    // its own server and runner: the first test's jobs hold the other runner's slots
    const t = await startTestServer({ dispatchIntervalMs: 100 });
    const r = await FakeRunner.start(t, { name: 'grand-runner', capacity: 4 });
    await r.hello({ name: 'grand-runner', capacity: 4 });
    onTestFinished(async () => {
      await r.close();
      await t.close();
    });
    const res = await t.api('/api/jobs', { json: { agent: 'test-fixer', input: { repo: 'examples/calc' }, budgetUsd: 1 } });
    const p = (await res.json()) as Job;
    const start = async (jobId: number) => {
      const a = await r.next('job.assign', (f) => f.assignment.jobId === jobId, 10_000);
      r.send({ type: 'job.accepted', jobId, attempt: a.assignment.attempt });
      r.send({ type: 'job.events', jobId, attempt: a.assignment.attempt, events: [{ rseq: 1, at: new Date().toISOString(), type: 'harness.started', data: { harness: 'claude-code', pid: 1 } }] });
      await r.next('ack', () => true, 10_000);
      return a.assignment.token;
    };
    const rootToken = await start(p.id);
    const mk = (token: string, budgetUsd: number) => t.api('/api/jobs', { token, json: { agent: 'test-fixer', input: { repo: 'repos/api' }, budgetUsd } });
    const child = (await (await mk(rootToken, 0.1)).json()) as Job; // tree $1.00, child's own $0.10
    const childToken = await start(child.id);
    // $0.50 fits in the tree's $1.00 but not in the parent's own $0.10
    const tooMuch = await mk(childToken, 0.5);
    expect(tooMuch.status).toBe(422);
    expect(await tooMuch.json()).toMatchObject({ error: { code: 'budget_exceeded', field: 'budgetUsd', message: `budgetUsd $0.500000 is more than job ${child.id}'s budget (a sub-limit in job tree ${p.id}) has left ($0.100000)` } });
    // the tree bounds when it has less room than the parent's sub-limit
    const ok = await mk(childToken, 0.1);
    expect(ok.status).toBe(201);
    const tree = (await (await t.api(`/api/jobs/${p.id}/budget`)).json()) as BudgetView;
    expect(tree.budget.remainingMicros).toBe(1_000_000);

    // a grandchild of no sub-limit of its own uses its parent's: shown and topped up, not the tree's
    const sharing = (await (await t.api('/api/jobs', { token: childToken, json: { agent: 'test-fixer', input: { repo: 'repos/api' } } })).json()) as Job;
    const own = (await (await t.api(`/api/jobs/${sharing.id}/budget`)).json()) as BudgetView;
    // child: $0.10 own limit, its grandchild `ok` holds none of it until it spends: $0.10 left
    expect(own).toEqual({ jobId: sharing.id, budget: { rootId: p.id, jobId: child.id, limitMicros: 100_000, spentMicros: 0, reservedMicros: 0, remainingMicros: 100_000 }, resumed: [], pausedJobs: [], jobStatus: expect.stringMatching(/^(queued|assigned)$/) });
    const admin = new FlotillaClient({ url: t.url, token: t.admin });
    expect(describeJob(await admin.getJob(sharing.id), await admin.getBudget(sharing.id))).toMatch(new RegExp(`^budget: {4}\\$0\\.100000 \\(shared with job ${child.id}'s sub-limit in job tree ${p.id}, \\$0\\.100000 left\\)$`, 'm'));
    const up = (await (await t.api(`/api/jobs/${sharing.id}/budget`, { json: { addUsd: 0.25 } })).json()) as BudgetView;
    expect(up.budget).toEqual({ rootId: p.id, jobId: child.id, limitMicros: 350_000, spentMicros: 0, reservedMicros: 0, remainingMicros: 350_000 });
    expect((await t.store.getTreeBudget(p.id, Date.now()))?.limitMicros).toBe(1_000_000); // the tree is unchanged
  });
});
