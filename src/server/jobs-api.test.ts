import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Job, JobList } from '../protocol/index.js';
import { startTestServer, type TestServer } from './test-helpers.js';

type ErrorBody = { error: { code: string; message: string; field?: string } };

describe('POST /api/jobs', () => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer();
  });
  afterAll(() => t.close());

  const jobCount = async () => (await t.store.listJobs({ limit: 200 })).length;

  const bad: Array<[string, RequestInit & { json?: unknown }, number, string, RegExp, string | undefined]> = [
    ['non-JSON body', { method: 'POST', body: 'agent=test-fixer', headers: { 'content-type': 'application/json' } }, 400, 'invalid_json', /JSON/, undefined],
    ['empty body', { method: 'POST' }, 400, 'invalid_json', /JSON/, undefined],
    ['missing agent', { json: { input: { repo: 'x' } } }, 400, 'invalid_request', /^agent: /, 'agent'],
    ['unknown field', { json: { agent: 'test-fixer', input: { repo: 'x' }, colour: 'red' } }, 400, 'invalid_request', /colour/, 'colour'],
    ['negative budget', { json: { agent: 'test-fixer', input: { repo: 'x' }, budgetUsd: -1 } }, 400, 'invalid_request', /^budgetUsd: /, 'budgetUsd'],
    ['budget finer than a micro-dollar', { json: { agent: 'test-fixer', input: { repo: 'x' }, budgetUsd: 0.0012345678 } }, 400, 'invalid_request', /^budgetUsd: must have at most 6 decimals/, 'budgetUsd'],
    ['bad label key', { json: { agent: 'test-fixer', input: { repo: 'x' }, labels: { 'bad key': 'v' } } }, 400, 'invalid_request', /^labels\.bad key: /, 'labels.bad key'],
    ['input not an object', { json: { agent: 'test-fixer', input: 'examples/calc' } }, 400, 'invalid_request', /^input: /, 'input'],
    ['unknown agent', { json: { agent: 'no-such-agent', input: {} } }, 404, 'unknown_agent', /no-such-agent/, 'agent'],
    ['repo of the wrong type', { json: { agent: 'test-fixer', input: { repo: 42 } } }, 422, 'invalid_input', /^input\.repo: must be string$/, 'input.repo'],
    ['repo missing', { json: { agent: 'test-fixer', input: {} } }, 422, 'invalid_input', /^input\.repo: is required$/, 'input.repo'],
    ['extra input property', { json: { agent: 'test-fixer', input: { repo: 'x', branch: 'y' } } }, 422, 'invalid_input', /^input\.branch: is not allowed$/, 'input.branch'],
    ['nested minimum', { json: { agent: 'gpu-job', input: { n: 0 } } }, 422, 'invalid_input', /^input\.n: must be >= 1$/, 'input.n'],
  ];

  for (const [name, init, status, code, message, field] of bad) {
    it(`${name} → ${status} ${code}, naming the problem, and no job row`, async () => {
      const res = await t.api('/api/jobs', init);
      expect(res.status).toBe(status);
      const body = (await res.json()) as ErrorBody;
      expect(body.error.code).toBe(code);
      expect(body.error.message).toMatch(message);
      expect(body.error.field).toBe(field);
      expect(await jobCount()).toBe(0);
    });
  }

  it('missing token → 401 and no job row', async () => {
    const res = await t.api('/api/jobs', { token: null, json: { agent: 'test-fixer', input: { repo: 'x' } } });
    expect(res.status).toBe(401);
    expect(await jobCount()).toBe(0);
  });

  it('creates a queued job with the agent default budget and the merged selector', async () => {
    const res = await t.api('/api/jobs', { json: { agent: 'gpu-job', input: { n: 3 }, labels: { os: 'linux' }, priority: 5 } });
    expect(res.status).toBe(201);
    const job = (await res.json()) as Job;
    expect(job).toMatchObject({
      agent: 'gpu-job',
      agentVersion: '3',
      input: { n: 3 },
      status: 'queued',
      priority: 5,
      selector: { gpu: 'a100', os: 'linux' },
      budgetMicros: 500_000,
      parentId: null,
      rootId: job.id,
      attempt: 0,
      runnerId: null,
    });
    expect(Number.isNaN(Date.parse(job.createdAt))).toBe(false);
    const stored = await t.store.getJob(job.id);
    expect(stored?.createdAt).toBe(Date.parse(job.createdAt));
    // An explicit budget wins (USD → µ$) and run labels override the agent's.
    const res2 = await t.api('/api/jobs', { json: { agent: 'gpu-job', budgetUsd: 1.25, labels: { gpu: 'h100' } } });
    const job2 = (await res2.json()) as Job;
    expect(job2.budgetMicros).toBe(1_250_000);
    expect(job2.selector).toEqual({ gpu: 'h100' });
  });
});

describe('GET /api/jobs and /api/jobs/:id', () => {
  let t: TestServer;
  const ids: number[] = [];
  beforeAll(async () => {
    t = await startTestServer();
    for (let i = 0; i < 5; i++) {
      const agent = i % 2 === 0 ? 'gpu-job' : 'test-fixer';
      const res = await t.api('/api/jobs', { json: { agent, input: agent === 'test-fixer' ? { repo: `r${i}` } : {} } });
      ids.push(((await res.json()) as Job).id);
    }
  });
  afterAll(() => t.close());

  it('pages newest first with a cursor', async () => {
    const p1 = (await (await t.api('/api/jobs?limit=2')).json()) as JobList;
    expect(p1.jobs.map((j) => j.id)).toEqual([ids[4], ids[3]]);
    expect(p1.nextCursor).toBe(ids[3]);
    const p2 = (await (await t.api(`/api/jobs?limit=2&before=${p1.nextCursor}`)).json()) as JobList;
    expect(p2.jobs.map((j) => j.id)).toEqual([ids[2], ids[1]]);
    const p3 = (await (await t.api(`/api/jobs?limit=2&before=${p2.nextCursor}`)).json()) as JobList;
    expect(p3.jobs.map((j) => j.id)).toEqual([ids[0]]);
    expect(p3.nextCursor).toBeNull();
    // a page that ends at the oldest job offers no next page (it offered an empty one: a fresh tester)
    const whole = (await (await t.api('/api/jobs?limit=5')).json()) as JobList;
    expect([whole.jobs.map((j) => j.id), whole.nextCursor]).toEqual([[...ids].reverse(), null]);
    const fromSecond = (await (await t.api(`/api/jobs?limit=2&before=${ids[2]}`)).json()) as JobList;
    expect([fromSecond.jobs.map((j) => j.id), fromSecond.nextCursor]).toEqual([[ids[1], ids[0]], null]);
  });

  it('filters by agent and status', async () => {
    const byAgent = (await (await t.api('/api/jobs?agent=test-fixer')).json()) as JobList;
    expect(byAgent.jobs.map((j) => j.id)).toEqual([ids[3], ids[1]]);
    await t.api(`/api/jobs/${ids[1]}/cancel`, { method: 'POST' });
    const cancelled = (await (await t.api('/api/jobs?status=cancelled')).json()) as JobList;
    expect(cancelled.jobs.map((j) => j.id)).toEqual([ids[1]]);
  });

  it('rejects bad query parameters naming them', async () => {
    for (const [q, field] of [
      ['status=done', 'status'],
      ['limit=0', 'limit'],
      ['limit=201', 'limit'],
      ['limit=abc', 'limit'],
      ['before=-1', 'before'],
    ]) {
      const res = await t.api(`/api/jobs?${q}`);
      expect(res.status, q).toBe(400);
      const body = (await res.json()) as ErrorBody;
      expect(body.error.field).toBe(field);
      expect(body.error.message.startsWith(`${field}: `)).toBe(true);
    }
  });

  it('GET /api/jobs/:id includes usage summed from the ledger', async () => {
    const id = ids[0]!;
    const call = { jobId: id, attempt: 1, provider: 'scripted', model: 'm', api: 'anthropic-messages', streamed: true, httpStatus: 200, startedAt: 1, durationMs: 5 };
    await t.store.recordModelCall({ ...call, inputTokens: 100, outputTokens: 20, cacheReadTokens: 0, cacheWriteTokens: 2000, usageKnown: true, costMicros: 7_800 });
    await t.store.recordModelCall({ ...call, inputTokens: 5, outputTokens: 7, cacheReadTokens: 2000, cacheWriteTokens: 0, usageKnown: false, costMicros: 720 });
    const job = (await (await t.api(`/api/jobs/${id}`)).json()) as Job;
    expect(job.usage).toEqual({ modelCalls: 2, inputTokens: 105, outputTokens: 27, cacheReadTokens: 2000, cacheWriteTokens: 2000, costMicros: 8_520, estimatedCalls: 1 });
    expect((await t.api('/api/jobs/999999')).status).toBe(404);
    expect((await t.api('/api/jobs/abc')).status).toBe(400);
    // a runner id that is not one: 400 naming it too (it was "no route", fresh-tester finding); a number none has: 404
    for (const path of ['/api/runners/abc', '/api/runners/abc/activity', '/api/runners/-1/hold', '/api/runners/0']) {
      const res = await t.api(path);
      expect([res.status, ((await res.json()) as { error: { field?: string; message: string } }).error]).toEqual([400, { code: 'invalid_request', field: 'id', message: 'id: must be an integer from 1 to 2147483647 (a runner id)' }]);
    }
    expect((await t.api('/api/runners/999999')).status).toBe(404);
    expect((await t.api('/api/runners/register')).status).toBe(404);
  });

  it('GET /api/agents lists the loaded agents with their prompt text', async () => {
    const body = (await (await t.api('/api/agents')).json()) as { agents: { name: string; promptText: string }[] };
    expect(body.agents.map((a) => a.name)).toEqual(['code-explainer', 'gpu-job', 'issue-worker', 'migrator', 'pr-reviewer', 'repo-upgrader', 'test-fixer']);
    expect(body.agents.find((a) => a.name === 'gpu-job')!.promptText).toBe('Run gpu-job for {{input.n}}.');
  });
});
