import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BudgetView, Job } from '../protocol/index.js';
import { FakeRunner, startTestServer, type TestServer } from './test-helpers.js';

/**
 * `POST /api/jobs/:id/budget` refuses, changing nothing: a top-up that would raise a tree's limit
 * past $100,000 (400 naming the cap and the most that can be added), and a top-up of a tree whose
 * root job has ended (409 `job_ended`, "job N has ended (status)"), also asked through a child.
 */
describe('budget top-ups that are refused', () => {
  let t: TestServer;
  let r: FakeRunner;
  beforeAll(async () => {
    t = await startTestServer({ dispatchIntervalMs: 100 });
    r = await FakeRunner.start(t, { name: 'topup-runner', labels: { pool: 'topup' }, capacity: 4 });
    await r.hello({ name: 'topup-runner', labels: { pool: 'topup' }, capacity: 4 });
  });
  afterAll(async () => {
    await r.close();
    await t.close();
  });

  const budget = async (id: number) => ((await (await t.api(`/api/jobs/${id}/budget`)).json()) as BudgetView).budget;
  const topUp = (id: number, addUsd: number) => t.api(`/api/jobs/${id}/budget`, { json: { addUsd } });
  /** A job no runner takes (it stays queued). */
  const queued = async (budgetUsd: number) => (await (await t.api('/api/jobs', { json: { agent: 'test-fixer', input: { repo: 'x' }, labels: { pool: 'nobody' }, budgetUsd } })).json()) as Job;

  it('a tree may reach $100,000 but not pass it: 400 naming addUsd, the cap and what can still be added', async () => {
    const job = await queued(99_999.5);
    expect((await budget(job.id)).limitMicros).toBe(99_999_500_000);
    const over = await topUp(job.id, 1);
    expect(over.status).toBe(400);
    expect(await over.json()).toEqual({
      error: {
        code: 'invalid_request',
        field: 'addUsd',
        message: `addUsd: job tree ${job.id}'s budget would be $100000.500000, over the cap of $100,000 per tree (it is $99999.500000: at most $0.500000 can be added)`,
      },
    });
    expect((await budget(job.id)).limitMicros).toBe(99_999_500_000);
    const exact = await topUp(job.id, 0.5);
    expect(exact.status).toBe(200);
    expect(((await exact.json()) as BudgetView).budget.limitMicros).toBe(100_000_000_000);
    const more = await topUp(job.id, 0.000001);
    expect(more.status).toBe(400);
    expect(((await more.json()) as { error: { message: string } }).error.message).toContain('(it is at the cap already: nothing can be added)');
    expect((await budget(job.id)).limitMicros).toBe(100_000_000_000);
  });

  it('a tree whose root job has ended takes no top-up: 409 job_ended naming the job and its status', async () => {
    const job = await queued(1);
    expect((await t.api(`/api/jobs/${job.id}/cancel`, { method: 'POST' })).status).toBe(200);
    expect((await t.store.getJob(job.id))?.status).toBe('cancelled');
    const res = await topUp(job.id, 2);
    expect(res.status).toBe(409);
    expect(await res.json()).toEqual({ error: { code: 'job_ended', message: `job ${job.id} has ended (cancelled): its tree spends nothing more, so it takes no top-up` } });
    expect((await budget(job.id)).limitMicros).toBe(1_000_000);
  });

  it('a job paused for budget and then cancelled: its error keeps why it paused, without the top-up advice no top-up could follow (fresh-user finding)', async () => {
    const job = (await (await t.api('/api/jobs', { json: { agent: 'test-fixer', input: { repo: 'x' }, labels: { pool: 'topup' }, budgetUsd: 1 } })).json()) as Job;
    const a = await r.next('job.assign', (f) => f.assignment.jobId === job.id, 10_000);
    r.send({ type: 'job.accepted', jobId: job.id, attempt: a.assignment.attempt });
    r.send({ type: 'job.events', jobId: job.id, attempt: a.assignment.attempt, events: [{ rseq: 1, at: new Date().toISOString(), type: 'harness.started', data: { harness: 'claude-code', pid: 1 } }] });
    await r.next('ack', () => true, 10_000);
    // paused as the gateway pauses a job (budget-pause.ts), with its budget message (gateway/budget.ts)
    const paused = `budget exhausted: job tree ${job.id} (job ${job.id}) has a budget of $1.000000, $0.950000 spent and $0.000000 reserved by calls in flight, $0.050000 left; this call may cost up to $0.105200.`;
    expect(await t.store.transitionJob(job.id, a.assignment.attempt, ['running'], 'paused', Date.now(), { endReason: 'budget', error: `${paused} Top up with: flotilla budget ${job.id} --add <USD>` })).not.toBeNull();
    // the paused job's own token on the API: paused, not "unknown" (tester finding); once cancelled, unknown
    const own = await t.api(`/api/jobs/${job.id}/budget`, { token: a.assignment.token });
    expect([own.status, await own.json()]).toEqual([409, { error: { code: 'job_paused', message: `job ${job.id} is paused for budget: a top-up (flotilla budget ${job.id} --add USD) resumes it as a new attempt, with a new job token` } }]);
    expect((await t.api(`/api/jobs/${job.id}/cancel`, { method: 'POST' })).status).toBe(200);
    expect((await t.api(`/api/jobs/${job.id}/budget`, { token: a.assignment.token })).status).toBe(401);
    const view = (await (await t.api(`/api/jobs/${job.id}`)).json()) as Job;
    expect(view).toMatchObject({ status: 'cancelled', endReason: 'cancelled', error: `${paused} Cancelled while paused: no top-up resumes it.` });
    expect((await topUp(job.id, 1)).status).toBe(409);
  });

  it('asked through a child of a root that succeeded: 409 naming the root', async () => {
    const root = (await (await t.api('/api/jobs', { json: { agent: 'test-fixer', input: { repo: 'x' }, labels: { pool: 'topup' }, budgetUsd: 1 } })).json()) as Job;
    const a = await r.next('job.assign', (f) => f.assignment.jobId === root.id, 10_000);
    r.send({ type: 'job.accepted', jobId: root.id, attempt: a.assignment.attempt });
    r.send({ type: 'job.events', jobId: root.id, attempt: a.assignment.attempt, events: [{ rseq: 1, at: new Date().toISOString(), type: 'harness.started', data: { harness: 'claude-code', pid: 1 } }] });
    await r.next('ack', () => true, 10_000);
    const child = (await (await t.api('/api/jobs', { token: a.assignment.token, json: { agent: 'test-fixer', input: { repo: 'y' }, labels: { pool: 'nobody' } } })).json()) as Job;
    expect(child.rootId).toBe(root.id);
    // Before the root ends, the child's top-up goes to the tree, and the child's view names no ended root.
    expect((await topUp(child.id, 1)).status).toBe(200);
    expect(((await (await t.api(`/api/jobs/${child.id}/budget`)).json()) as BudgetView).rootStatus).toBeUndefined();
    expect((await budget(root.id)).limitMicros).toBe(2_000_000);
    r.send({ type: 'job.events', jobId: root.id, attempt: a.assignment.attempt, events: [{ rseq: 2, at: new Date().toISOString(), type: 'job.finished', data: { status: 'succeeded' } }] });
    await r.next('ack', () => true, 10_000);
    for (let i = 0; i < 100 && (await t.store.getJob(root.id))?.status !== 'succeeded'; i++) await new Promise((res) => setTimeout(res, 50));
    expect((await t.store.getJob(root.id))?.status).toBe('succeeded');
    const res = await topUp(child.id, 1);
    expect(res.status).toBe(409);
    expect(await res.json()).toEqual({ error: { code: 'job_ended', message: `job ${root.id} (the root of job ${child.id}'s tree) has ended (succeeded): its tree spends nothing more, so it takes no top-up` } });
    expect((await budget(root.id)).limitMicros).toBe(2_000_000);
    // the child's view says so before any top-up is tried (tester finding: only the root's did)
    expect(((await (await t.api(`/api/jobs/${child.id}/budget`)).json()) as BudgetView).rootStatus).toBe('succeeded');
  });
});
