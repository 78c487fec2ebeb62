import { spawn } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Job } from '../src/protocol/index.js';
import { FakeRunner, startTestServer, type TestServer } from '../src/server/test-helpers.js';
import { BIN, waitFor } from './helpers.js';

/**
 * The CLI over a job tree (issue 6), with the built `flotilla` against a real server; a
 * FakeRunner plays the jobs: `flotilla run migrator` prints the child's start line
 * (`migrator ⇢ repo-upgrader (job N/api)`) and the child's tool lines prefixed by its agent,
 * then the cost tables per job and per agent with counts; `jobs show ID --tree` prints the
 * same afterwards; `run --parent-token` starts a child. Costs: 1000 input + 100 output tokens
 * at 3 / 15 µ$ per token = 4,500 µ$ per call.
 */
describe('flotilla run / jobs show --tree over a job tree', () => {
  let t: TestServer;
  let r: FakeRunner;
  beforeAll(async () => {
    t = await startTestServer({ dispatchIntervalMs: 100 });
    r = await FakeRunner.start(t, { name: 'cli-runner', capacity: 4 });
    await r.hello({ name: 'cli-runner', capacity: 4 });
  });
  afterAll(async () => {
    await r.close();
    await t.close();
  });

  const flotilla = (args: string[], env: Record<string, string> = {}) => {
    const child = spawn(process.execPath, [BIN, ...args], { env: { PATH: process.env.PATH ?? '', FLOTILLA_SERVER: t.url, FLOTILLA_TOKEN: t.admin, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (err += d));
    const exit = new Promise<number>((res) => child.on('close', (code) => res(code ?? -1)));
    return { out: () => out, err: () => err, exit };
  };
  /** The fake runner's next rseq per job (each attempt's events are numbered 1, 2, 3, ...: protocol). */
  const rseqs = new Map<number, number>();
  const send = (jobId: number, events: Record<string, unknown>[]) =>
    r.send({ type: 'job.events', jobId, attempt: 1, events: events.map((e) => {
      const rseq = (rseqs.get(jobId) ?? 0) + 1;
      rseqs.set(jobId, rseq);
      return { rseq, at: new Date().toISOString(), ...e };
    }) });
  const call = (jobId: number) =>
    t.store.recordModelCall({ jobId, attempt: 1, provider: 'scripted', model: 'claude-sonnet-4-5', api: 'anthropic-messages', streamed: false, httpStatus: 200, inputTokens: 1000, outputTokens: 100, cacheReadTokens: 0, cacheWriteTokens: 0, usageKnown: true, costMicros: 4500, startedAt: Date.now(), durationMs: 2 });

  it('run follows the children and ends with the tables per job and per agent; jobs show --tree prints them again', async () => {
    const repos = [{ repo: 'repos/api', toolchain: 'node', test_command: 'npm test', upgrade_command: 'npm i left-pad@2' }];
    const run = flotilla(['run', 'migrator', JSON.stringify({ repos }), '--budget', '2']);
    const pa = await r.next('job.assign', () => true, 20_000);
    const parentId = pa.assignment.jobId;
    r.send({ type: 'job.accepted', jobId: parentId, attempt: 1 });
    send(parentId, [{ type: 'harness.started', data: { harness: 'claude-code', pid: 1 } }]);
    await call(parentId);
    // The migrator starts a child with its job token, as `flotilla mcp` / `run --parent-token` do.
    const made = await t.api('/api/jobs', { token: pa.assignment.token, json: { agent: 'repo-upgrader', input: { repo: 'repos/api', test_command: 'npm test', upgrade_command: 'npm i left-pad@2' } } });
    expect(made.status).toBe(201);
    const childId = ((await made.json()) as Job).id;
    await waitFor('the run to show the child', () => run.out().includes(`migrator ⇢ repo-upgrader (job ${childId}/api)`), 20_000);
    const ca = await r.next('job.assign', (f) => f.assignment.jobId === childId, 20_000);
    r.send({ type: 'job.accepted', jobId: childId, attempt: 1 });
    send(childId, [
      { type: 'harness.started', data: { harness: 'claude-code', pid: 2 } },
      { type: 'tool.call', data: { id: 't1', name: 'Bash', input: { command: 'npm test' } } },
      { type: 'tool.result', data: { id: 't1', output: '412 passed, 3 failed', isError: false } },
    ]);
    await call(childId);
    await call(childId);
    await waitFor('the child tool lines', () => run.out().includes('repo-upgrader ← Bash 412 passed, 3 failed'), 20_000);
    send(childId, [{ type: 'job.finished', data: { status: 'succeeded', result: { summary: 'upgraded', branch: `flotilla/job-${childId}`, commit: 'abc1234' } } }]);
    await waitFor('the child to end', async () => (await t.store.getJob(childId))?.status === 'succeeded', 20_000);
    send(parentId, [
      { type: 'message', data: { role: 'assistant', text: '1 of 1 repositories upgraded, 1 change proposed, 0 need a human look.' } },
      { type: 'job.finished', data: { status: 'succeeded', result: { summary: 'done' } } },
    ]);
    expect(await run.exit).toBe(0);
    const out = run.out();
    expect(ca.assignment.token).not.toBe(pa.assignment.token);
    const lines = out.split('\n');
    const at = (s: string) => lines.findIndex((l) => l.includes(s));
    expect(at(`migrator ⇢ repo-upgrader (job ${childId}/api)`)).toBeGreaterThan(-1);
    expect(at('repo-upgrader → Bash {"command":"npm test"}')).toBeGreaterThan(at(`migrator ⇢ repo-upgrader`));
    expect(at('repo-upgrader ← Bash 412 passed, 3 failed')).toBeGreaterThan(at('repo-upgrader → Bash'));
    expect(at('migrator: 1 of 1 repositories upgraded, 1 change proposed, 0 need a human look.')).toBeGreaterThan(at('repo-upgrader ← Bash'));
    // Tables: per job (indented child), total, per agent with counts.
    expect(out).toMatch(new RegExp(`\\n${parentId} +migrator +succeeded +cli-runner +1 +1000 +100 +0 +0 +\\$0\\.004500\\n`));
    expect(out).toMatch(new RegExp(`\\n  ${childId} +repo-upgrader +succeeded +cli-runner +2 +2000 +200 +0 +0 +\\$0\\.009000\\n`));
    expect(out).toMatch(/\ntotal +2 jobs +3 +3000 +300 +0 +0 +\$0\.013500\n/);
    expect(out).toMatch(/\nmigrator × 1 +1 +1000 +100 +0 +0 +\$0\.004500\n/);
    expect(out).toMatch(/\nrepo-upgrader × 1 +2 +2000 +200 +0 +0 +\$0\.009000\n/);

    const show = flotilla(['jobs', 'show', String(parentId), '--tree']);
    expect(await show.exit).toBe(0);
    expect(show.out()).toContain(`job tree ${parentId}: 2 jobs, $0.013500\nmigrator (job ${parentId}) succeeded on cli-runner $0.004500\n  ⇢ repo-upgrader (job ${childId}) succeeded on cli-runner $0.009000 flotilla/job-${childId}\n`);
    expect(show.out()).toMatch(/\nrepo-upgrader × 1 +2 +2000 +200 +0 +0 +\$0\.009000\n/);
    const json = flotilla(['jobs', 'show', String(parentId), '--tree', '--json']);
    expect(await json.exit).toBe(0);
    const tree = JSON.parse(json.out()) as { tree: { jobs: number; total: { costMicros: number } } };
    expect([tree.tree.jobs, tree.tree.total.costMicros]).toEqual([2, 13_500]);
    // The parent's result lists its child with its cost.
    expect((await t.store.getJob(parentId))!.result).toEqual({ summary: 'done', children: [{ id: childId, agent: 'repo-upgrader', label: 'api', status: 'succeeded', endReason: null, branch: `flotilla/job-${childId}`, commit: 'abc1234', needsHuman: false, costMicros: 9000 }] });
  }, 60_000);

  it('run says when a child pauses for budget, naming the top-up, and when it resumes (fresh-tester finding: only "still working")', async () => {
    const repos = [{ repo: 'repos/web', toolchain: 'node', test_command: 'npm test', upgrade_command: 'npm i left-pad@2' }];
    const run = flotilla(['run', 'migrator', JSON.stringify({ repos }), '--budget', '0.01']);
    const pa = await r.next('job.assign', () => true, 20_000);
    const parentId = pa.assignment.jobId;
    r.send({ type: 'job.accepted', jobId: parentId, attempt: 1 });
    const made = await t.api('/api/jobs', { token: pa.assignment.token, json: { agent: 'repo-upgrader', input: { repo: 'repos/web', test_command: 'npm test', upgrade_command: 'npm i left-pad@2' } } });
    const childId = ((await made.json()) as Job).id;
    const ca = await r.next('job.assign', (f) => f.assignment.jobId === childId, 20_000);
    r.send({ type: 'job.accepted', jobId: childId, attempt: 1 });
    // the child's call does not fit the tree's $0.01: 1,000 output tokens at $15 per million are $0.015
    const refused = await fetch(`${t.url}/v1/messages`, { method: 'POST', headers: { 'x-api-key': ca.assignment.token, 'content-type': 'application/json', 'anthropic-version': '2023-06-01' }, body: JSON.stringify({ model: 'claude-sonnet-4-5', max_tokens: 1000, messages: [{ role: 'user', content: 'go' }] }) });
    expect(refused.status).toBe(402);
    await waitFor('the run to say the child paused', () => run.out().includes(`repo-upgrader (job ${childId}) paused for budget: \`flotilla budget ${childId} --add USD\` from another shell resumes it`), 20_000);
    // its harness exits on the refusal, as Claude Code does; the top-up then resumes it
    send(childId, [{ type: 'job.finished', data: { status: 'failed', reason: 'budget', error: 'budget exhausted' } }]);
    expect((await t.api(`/api/jobs/${childId}/budget`, { json: { addUsd: 1 } })).status).toBe(200);
    await waitFor('the run to say the child resumed', () => run.out().includes(`repo-upgrader (job ${childId}) resumed`), 20_000);
    await r.next('job.assign', (f) => f.assignment.jobId === childId && f.assignment.attempt === 2, 20_000);
    r.send({ type: 'job.accepted', jobId: childId, attempt: 2 });
    // cancel the tree; the runner confirms both ends
    expect((await t.api(`/api/jobs/${parentId}/cancel`, { method: 'POST' })).status).toBe(200);
    const at = () => new Date().toISOString();
    r.send({ type: 'job.events', jobId: childId, attempt: 2, events: [{ rseq: 1, at: at(), type: 'job.finished', data: { status: 'cancelled' } }] });
    send(parentId, [{ type: 'job.finished', data: { status: 'cancelled' } }]);
    expect(await run.exit).toBe(1);
    expect(run.out()).not.toContain('migrator (job'); // the root's own pause or end is not a child's line
  }, 60_000);

  it('run --parent-token starts a child of that job on FLOTILLA_URL; a dead token is refused', async () => {
    const p = (await (await t.api('/api/jobs', { json: { agent: 'test-fixer', input: { repo: 'x' } } })).json()) as Job;
    const a = await r.next('job.assign', (f) => f.assignment.jobId === p.id, 20_000);
    r.send({ type: 'job.accepted', jobId: p.id, attempt: 1 });
    const run = flotilla(['run', 'test-fixer', '{"repo":"y"}', '--detach', '--json', '--labels', 'gpu=none'], { FLOTILLA_PARENT_TOKEN: a.assignment.token, FLOTILLA_URL: t.url, FLOTILLA_SERVER: 'http://127.0.0.1:9', FLOTILLA_TOKEN: '' });
    expect(await run.exit).toBe(0);
    const child = (JSON.parse(run.out()) as { job: Job }).job;
    expect([child.parentId, child.rootId]).toEqual([p.id, p.id]);
    await t.api(`/api/jobs/${p.id}/cancel`, { json: {} });
    const dead = flotilla(['run', 'test-fixer', '{"repo":"y"}', '--detach'], { FLOTILLA_PARENT_TOKEN: a.assignment.token, FLOTILLA_URL: t.url });
    expect(await dead.exit).toBe(1);
    expect(dead.err()).toContain('unknown job token, or its job is no longer running');
    // with --json: the API's error line, its code and status kept
    const deadJson = flotilla(['run', 'test-fixer', '{"repo":"y"}', '--detach', '--json'], { FLOTILLA_PARENT_TOKEN: a.assignment.token, FLOTILLA_URL: t.url });
    expect(await deadJson.exit).toBe(1);
    expect(JSON.parse(deadJson.err())).toEqual({
      error: { message: 'unknown job token, or its job is no longer running (a resumed or retried job runs with a new token) — the job token of --parent-token / FLOTILLA_PARENT_TOKEN was refused (unknown, or its job has ended)', code: 'unauthorized', status: 401 },
    });
    expect((await t.store.getJob(child.id))!.status).toBe('cancelled');
  }, 60_000);
});
