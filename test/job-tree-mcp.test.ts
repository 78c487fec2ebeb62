import { spawnSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { Job } from '../src/protocol/index.js';
import { FakeRunner, startTestServer, type TestServer } from '../src/server/test-helpers.js';
import { BIN } from './helpers.js';

/**
 * `flotilla mcp` as a real stdio MCP server (the built CLI, `npx tsc -p tsconfig.build.json`),
 * driven by the MCP SDK's client, against a real server where a FakeRunner holds the parent
 * job: start_job, job_status, wait_jobs (timeout, then results with cost), cancel_job, and the
 * limits as tool errors. Cost figures: 1000 input + 100 output tokens at 3 / 15 µ$ per token
 * = 4,500 µ$.
 */
describe('flotilla mcp (stdio)', () => {
  let t: TestServer;
  let r: FakeRunner;
  let parent: Job;
  let token: string;
  let mcp: Client;
  beforeAll(async () => {
    t = await startTestServer({ dispatchIntervalMs: 100, treeLimits: { maxDepth: 1, maxJobs: 4 } });
    r = await FakeRunner.start(t, { name: 'mcp-runner', capacity: 4 });
    await r.hello({ name: 'mcp-runner', capacity: 4 });
    parent = (await (await t.api('/api/jobs', { json: { agent: 'test-fixer', input: { repo: 'examples/calc' }, budgetUsd: 1 } })).json()) as Job;
    const a = await r.next('job.assign', (f) => f.assignment.jobId === parent.id, 10_000);
    r.send({ type: 'job.accepted', jobId: parent.id, attempt: 1 });
    token = a.assignment.token;
    mcp = new Client({ name: 'test', version: '1' });
    await mcp.connect(
      new StdioClientTransport({
        command: process.execPath,
        args: [BIN, 'mcp'],
        env: { PATH: process.env.PATH ?? '', FLOTILLA_URL: t.url, FLOTILLA_JOB_TOKEN: token, FLOTILLA_JOB_ID: String(parent.id) },
        stderr: 'pipe',
      }),
    );
  }, 60_000);
  afterAll(async () => {
    await mcp?.close();
    await r?.close();
    await t?.close();
  });

  const call = async (name: string, args: Record<string, unknown>) => {
    const res = (await mcp.callTool({ name, arguments: args })) as { content: { type: string; text: string }[]; isError?: boolean; structuredContent?: Record<string, unknown> };
    return { error: res.isError === true, text: res.content[0]!.text, data: res.structuredContent ?? {} };
  };

  it('lists the four tools', async () => {
    const { tools } = await mcp.listTools();
    expect(tools.map((x) => x.name).sort()).toEqual(['cancel_job', 'job_status', 'start_job', 'wait_jobs']);
    expect(tools.find((x) => x.name === 'start_job')!.inputSchema.required).toEqual(['agent']);
  });

  it('start_job, job_status, wait_jobs (timeout, then the structured results and costs), cancel_job, limits', async () => {
    const started = await call('start_job', { agent: 'test-fixer', input: { repo: 'repos/api' }, labels: { toolchain: 'node' }, budget_usd: 0.5 });
    expect(started.error).toBe(false);
    expect(started.data).toMatchObject({ agent: 'test-fixer', status: 'queued', done: false, labels: { toolchain: 'node' }, cost_micros: 0, cost: '$0.000000' });
    const childId = started.data.id as number;
    expect((await t.store.getJob(childId))).toMatchObject({ parentId: parent.id, rootId: parent.id, budgetMicros: 500_000 });
    const other = await call('start_job', { agent: 'test-fixer', input: { repo: 'repos/web' } });
    const otherId = other.data.id as number;

    expect((await call('job_status', { id: childId })).data).toMatchObject({ id: childId, status: 'queued' });
    const waited = await call('wait_jobs', { ids: [childId], timeout_seconds: 0.3 });
    expect(waited.data).toMatchObject({ all_done: false, timed_out: true, jobs: [{ id: childId, status: 'queued' }] });

    // The child runs (no runner has toolchain=node: hand it to the fake runner directly), calls the model, succeeds with a result.
    await t.store.transitionJob(childId, null, ['queued'], 'cancelled', Date.now()).then(() => undefined, () => undefined);
    const third = await call('start_job', { agent: 'test-fixer', input: { repo: 'repos/cli' } });
    expect(third.error).toBe(false);
    const thirdId = third.data.id as number;
    const a = await r.next('job.assign', (f) => f.assignment.jobId === thirdId || f.assignment.jobId === otherId, 10_000);
    const runId = a.assignment.jobId;
    r.send({ type: 'job.accepted', jobId: runId, attempt: 1 });
    await t.store.recordModelCall({ jobId: runId, attempt: 1, provider: 'scripted', model: 'claude-sonnet-4-5', api: 'anthropic-messages', streamed: false, httpStatus: 200, inputTokens: 1000, outputTokens: 100, cacheReadTokens: 0, cacheWriteTokens: 0, usageKnown: true, costMicros: 4500, startedAt: Date.now(), durationMs: 3 });
    const result = { summary: 'upgraded; 12 tests pass', branch: `flotilla/job-${runId}`, commit: 'abc123', changedFiles: ['package.json'], needsHuman: true };
    r.send({ type: 'job.events', jobId: runId, attempt: 1, events: [{ rseq: 1, at: new Date().toISOString(), type: 'job.finished', data: { status: 'succeeded', result } }] });
    const done = await call('wait_jobs', { ids: [runId], timeout_seconds: 20 });
    expect(done.data).toMatchObject({ all_done: true, timed_out: false, succeeded: 1, failed: 0, needs_human: 1, total_cost_micros: 4500, total_cost: '$0.004500' });
    expect((done.data.jobs as unknown[])[0]).toMatchObject({ id: runId, status: 'succeeded', summary: 'upgraded; 12 tests pass', branch: `flotilla/job-${runId}`, commit: 'abc123', changed_files: ['package.json'], needs_human: true, cost_micros: 4500, model_calls: 1 });

    // cancel_job on the other child; on the parent itself it is refused.
    const pending = runId === thirdId ? otherId : thirdId;
    const cancelled = await call('cancel_job', { id: pending });
    expect(cancelled.error).toBe(false);
    expect(['cancelled', 'cancelling']).toContain(cancelled.data.status);
    const self = await call('cancel_job', { id: parent.id });
    expect(self).toMatchObject({ error: true });
    expect(self.text).toContain(`may cancel only its own descendants`);

    // 4 jobs now (maxJobs 4): the next start_job is a clear tool error; so is a sub-limit above what is left.
    const full = await call('start_job', { agent: 'test-fixer', input: { repo: 'repos/x' } });
    expect(full.error).toBe(true);
    expect(full.text).toBe(`job ${parent.id} may not start a child: job count limit: the tree already holds 4 jobs and may hold at most 4 (FLOTILLA_TREE_MAX_JOBS) (tree_limit, HTTP 422)`);
    const bad = await call('start_job', { agent: 'no-such-agent', input: {} });
    expect(bad).toMatchObject({ error: true });
    expect(bad.text).toContain('unknown agent "no-such-agent"');
    // wait_jobs without ids: every child of this job.
    const all = await call('wait_jobs', { timeout_seconds: 10 });
    expect((all.data.jobs as { id: number }[]).map((j) => j.id)).toEqual([childId, otherId, thirdId]);
  }, 60_000);

  it('exits 2 naming the variable when FLOTILLA_JOB_TOKEN is missing', () => {
    const res = spawnSync(process.execPath, [BIN, 'mcp'], { env: { PATH: process.env.PATH ?? '', FLOTILLA_URL: 'http://127.0.0.1:1' }, encoding: 'utf8', input: '' });
    expect(res.status).toBe(2);
    expect(res.stderr).toContain('no job token: set FLOTILLA_JOB_TOKEN or --job-token');
  });
});
