import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Job, JobTree } from '../src/protocol/index.js';
import { FlotillaClient } from '../src/client/index.js';
import { ApiError } from '../src/client/errors.js';
import { createTestDatabase } from '../src/store/test-pg.js';
import { FakeRunner, startTestServer, type TestServer } from '../src/server/test-helpers.js';

/**
 * Job trees through the real HTTP API (issue 6), on SQLite and PostgreSQL: a running job's
 * token (`flj_...`) starts children in its tree, reads its tree, cancels its descendants and
 * nothing else; depth/count limits and budget sub-limits are refused with clear errors;
 * cancelling a job cancels its whole subtree; `GET /api/jobs/:id/tree` sums the ledger.
 * Expected figures are worked out by hand from the test gateway's default price
 * (input 3, output 15 USD per million tokens = 3 and 15 µ$ per token).
 */
const pg = await createTestDatabase();
afterAll(async () => {
  await pg?.drop();
});

describe.each([['sqlite', null], ...(pg ? [['postgres', pg.url]] : [])] as Array<[string, string | null]>)('job trees over the API (%s)', (_dialect, databaseUrl) => {
  let t: TestServer;
  let r: FakeRunner;
  /** The fake runner's next rseq per job (each attempt's events are numbered 1, 2, 3, ...: protocol). */
  const rseqs = new Map<number, number>();
  const nextRseq = (jobId: number): number => {
    const n = (rseqs.get(jobId) ?? 0) + 1;
    rseqs.set(jobId, n);
    return n;
  };
  beforeAll(async () => {
    t = await startTestServer({ dispatchIntervalMs: 100, treeLimits: { maxDepth: 2, maxJobs: 5 }, ...(databaseUrl ? { databaseUrl } : {}) });
    r = await FakeRunner.start(t, { name: 'tree-runner', capacity: 4 });
    await r.hello({ name: 'tree-runner', capacity: 4 });
  });
  afterEach(async () => {
    for (const j of await t.store.listJobs({ limit: 200 })) {
      if (['queued', 'assigned', 'running', 'paused', 'cancelling'].includes(j.status)) await t.store.transitionJob(j.id, null, [j.status], 'cancelled', Date.now());
    }
    r.frames.splice(0);
  });
  afterAll(async () => {
    await r.close();
    await t.close();
  });

  /** Waits for the assignment of `jobId`, accepts it and reports the harness started; returns its job token. */
  async function run(jobId: number): Promise<string> {
    const a = await r.next('job.assign', (f) => f.assignment.jobId === jobId, 10_000);
    r.send({ type: 'job.accepted', jobId, attempt: a.assignment.attempt });
    r.send({ type: 'job.events', jobId, attempt: a.assignment.attempt, events: [{ rseq: nextRseq(jobId), at: new Date().toISOString(), type: 'harness.started', data: { harness: 'claude-code', pid: 1 } }] });
    await r.next('ack', () => true, 10_000);
    return a.assignment.token;
  }
  const root = async (budgetUsd = 1): Promise<Job> => {
    const res = await t.api('/api/jobs', { json: { agent: 'test-fixer', input: { repo: 'examples/calc' }, budgetUsd } });
    expect(res.status).toBe(201);
    return (await res.json()) as Job;
  };
  const child = (token: string, body: Record<string, unknown>) => t.api('/api/jobs', { token, json: { agent: 'test-fixer', input: { repo: 'repos/api' }, ...body } });

  it('a job token starts a child in its tree; the parent gets child.started; the token reads its tree only', async () => {
    const p = await root();
    const other = await root();
    const token = await run(p.id);
    expect(token.startsWith('flj_')).toBe(true);
    const res = await child(token, { labels: { toolchain: 'node' }, budgetUsd: 0.25 });
    expect(res.status).toBe(201);
    const c = (await res.json()) as Job;
    expect(c).toMatchObject({ parentId: p.id, rootId: p.id, agent: 'test-fixer', status: 'queued', budgetMicros: 250_000, selector: { toolchain: 'node' }, input: { repo: 'repos/api' } });
    const events = await t.store.listEvents(p.id, 0, 100);
    expect(events.filter((e) => e.type === 'child.started').map((e) => e.data)).toEqual([{ jobId: c.id, agent: 'test-fixer', label: 'api' }]);
    // The client SDK with the job token, as the MCP server uses it.
    const sdk = new FlotillaClient({ url: t.url, token });
    expect((await sdk.getJob(c.id)).parentId).toBe(p.id);
    await expect(sdk.getJob(other.id)).rejects.toMatchObject({ status: 403, code: 'forbidden' });
    await expect(sdk.listRunners()).rejects.toBeInstanceOf(ApiError);
    expect((await t.api('/api/runners', { token })).status).toBe(403);
    await expect(sdk.cancelJob(p.id)).rejects.toMatchObject({ status: 403, message: `job ${p.id} may cancel only its own descendants, and job ${p.id} is not one` });
    expect((await t.api(`/api/jobs/${p.id}/budget`, { token, json: { addUsd: 5 } })).status).toBe(403);
    // A made-up job token: 401.
    expect((await t.api('/api/jobs', { token: 'flj_nope', json: { agent: 'test-fixer', input: { repo: 'x' } } })).status).toBe(401);
  });

  it('refuses a sub-limit above what the tree has left, and a child past the depth or count limit', async () => {
    const p = await root(0.5);
    const token = await run(p.id);
    const tooMuch = await child(token, { budgetUsd: 0.6 });
    expect(tooMuch.status).toBe(422);
    expect(await tooMuch.json()).toEqual({ error: { code: 'budget_exceeded', message: `budgetUsd $0.600000 is more than job tree ${p.id} has left ($0.500000)`, field: 'budgetUsd' } });
    const bad = await child(token, { input: { nope: 1 } });
    expect(bad.status).toBe(422);
    expect(((await bad.json()) as { error: { code: string } }).error.code).toBe('invalid_input');

    // Depth: root 0 → child 1 → grandchild 2 (= maxDepth) → great-grandchild refused.
    const c1 = (await (await child(token, {})).json()) as Job;
    const t1 = await run(c1.id);
    const c2 = (await (await child(t1, {})).json()) as Job;
    expect(c2).toMatchObject({ parentId: c1.id, rootId: p.id });
    const t2 = await run(c2.id);
    const deep = await child(t2, {});
    expect(deep.status).toBe(422);
    expect(await deep.json()).toEqual({
      error: {
        code: 'tree_limit',
        message: `job ${c2.id} may not start a child: depth limit: job ${c2.id} is at depth 2 of its tree and a child would be at depth 3, past the tree's limit of 2 (FLOTILLA_TREE_MAX_DEPTH)`,
      },
    });
    // Count: 3 jobs now; two more fit (5), the sixth is refused, even when asked for at once.
    const burst = await Promise.all([child(token, {}), child(token, {}), child(t1, {})]);
    expect(burst.map((b) => b.status).sort()).toEqual([201, 201, 422]);
    const refused = burst.find((b) => b.status === 422)!;
    expect(((await refused.json()) as { error: { message: string } }).error.message).toMatch(/job count limit: the tree already holds 5 jobs and may hold at most 5 \(FLOTILLA_TREE_MAX_JOBS\)$/);
    expect((await t.store.listTreeJobs(p.id)).length).toBe(5);
  });

  it('a parent that ends without waiting for its children: the sweeper cancels them (running ones get job.cancel), the reason names the parent', async () => {
    const p = await root();
    const token = await run(p.id);
    const c1 = (await (await child(token, {})).json()) as Job;
    const a1 = await r.next('job.assign', (f) => f.assignment.jobId === c1.id, 10_000);
    r.send({ type: 'job.accepted', jobId: c1.id, attempt: a1.assignment.attempt });
    const c2 = (await (await child(token, { labels: { gpu: 'none' } })).json()) as Job; // stays queued
    const pa = (await t.store.getJob(p.id))!.attempt;
    r.send({ type: 'job.events', jobId: p.id, attempt: pa, events: [{ rseq: nextRseq(p.id), at: new Date().toISOString(), type: 'job.finished', data: { status: 'succeeded' } }] });
    const cancel = await r.next('job.cancel', (f) => f.jobId === c1.id, 10_000);
    expect(cancel.reason).toBe(`its parent job ${p.id} ended (succeeded) without waiting for it`);
    // the orphans are cancelled one after the other in the same sweep
    await expect.poll(async () => Object.fromEntries((await t.store.listTreeJobs(p.id)).map((j) => [j.id, j.status])), { timeout: 5_000 }).toEqual({ [p.id]: 'succeeded', [c1.id]: 'cancelling', [c2.id]: 'cancelled' });
    // the status event follows the transition (cancel-tree.ts): poll for it too
    const statusEvents = async () => (await t.store.listEvents(c2.id, 0, 100)).filter((e) => e.type === 'status').map((e) => e.data);
    await expect.poll(statusEvents, { timeout: 5_000 }).toContainEqual(expect.objectContaining({ status: 'cancelled', message: `its parent job ${p.id} ended (succeeded) without waiting for it` }));
  });

  it('cancelling a job cancels its whole subtree: running children get job.cancel, queued ones end at once', async () => {
    const p = await root();
    const token = await run(p.id);
    const c1 = (await (await child(token, {})).json()) as Job;
    const t1 = await run(c1.id);
    const g1 = (await (await child(t1, {})).json()) as Job; // will stay queued? the runner takes it: run it too
    const tg = await run(g1.id);
    const c2 = (await (await child(token, { labels: { gpu: 'none' } })).json()) as Job; // no runner has gpu=none: stays queued
    expect(tg.startsWith('flj_')).toBe(true);
    const res = await t.api(`/api/jobs/${p.id}/cancel`, { json: {} });
    expect(res.status).toBe(200);
    const statuses = Object.fromEntries((await t.store.listTreeJobs(p.id)).map((j) => [j.id, j.status]));
    expect(statuses).toEqual({ [p.id]: 'cancelling', [c1.id]: 'cancelling', [g1.id]: 'cancelling', [c2.id]: 'cancelled' });
    for (const id of [p.id, c1.id, g1.id]) await r.next('job.cancel', (f) => f.jobId === id, 10_000);
    // Every token of the tree is dead: no more children, no more reads.
    expect((await child(t1, {})).status).toBe(401);
    expect((await t.api(`/api/jobs/${p.id}/tree`, { token: tg })).status).toBe(401);
  });

  it('GET /api/jobs/:id/tree: nodes with runner, tokens and µ$, children, and the subtree total', async () => {
    const p = await root();
    const token = await run(p.id);
    const c1 = (await (await child(token, {})).json()) as Job;
    const c2 = (await (await child(token, {})).json()) as Job;
    const call = (jobId: number, input: number, output: number) =>
      t.store.recordModelCall({
        jobId,
        attempt: 1,
        provider: 'scripted',
        model: 'claude-sonnet-4-5',
        api: 'anthropic-messages',
        streamed: false,
        httpStatus: 200,
        inputTokens: input,
        outputTokens: output,
        cacheReadTokens: 0,
        cacheWriteTokens: 0,
        usageKnown: true,
        costMicros: input * 3 + output * 15,
        startedAt: Date.now(),
        durationMs: 5,
      });
    await call(p.id, 1000, 100); // 3,000 + 1,500 = 4,500 µ$
    await call(c1.id, 2000, 10); // 6,000 + 150 = 6,150 µ$
    await call(c1.id, 10, 10); // 30 + 150 = 180 µ$
    const sdk = new FlotillaClient({ url: t.url, token: t.admin });
    const tree: JobTree = await sdk.getJobTree(p.id);
    expect(tree.rootId).toBe(p.id);
    expect(tree.jobs).toBe(3);
    expect(tree.total).toMatchObject({ modelCalls: 3, inputTokens: 3010, outputTokens: 120, costMicros: 10_830 });
    expect(tree.tree).toMatchObject({ id: p.id, depth: 0, agent: 'test-fixer', status: 'running', runnerName: 'tree-runner', usage: { costMicros: 4500 } });
    expect(tree.tree.children.map((n) => [n.id, n.depth, n.parentId, n.usage.costMicros, n.usage.modelCalls, n.children.length])).toEqual([
      [c1.id, 1, p.id, 6330, 2, 0],
      [c2.id, 1, p.id, 0, 0, 0],
    ]);
    const sub = await sdk.getJobTree(c1.id);
    expect([sub.rootId, sub.jobs, sub.total.costMicros, sub.tree.id]).toEqual([p.id, 1, 6330, c1.id]);
    // The job token reads its own tree through the SDK too.
    expect((await new FlotillaClient({ url: t.url, token }).getJobTree(p.id)).jobs).toBe(3);
    await expect(sdk.getJobTree(999_999)).rejects.toMatchObject({ status: 404 });
  });
});
