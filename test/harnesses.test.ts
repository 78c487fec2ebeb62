/**
 * Issue 4 end to end: the same small task ("make out.txt containing hello, then say done") run
 * by the real Claude Code CLI, the real Codex CLI and a Python command harness (standard
 * library only) against the scripted model: the same event kinds in the same order and the
 * same recorded usage.
 * Then sessions: `--resume JOB` continues in the same workspace and conversation; a session
 * the harness cannot find reads `resume failed`.
 */
import { describe, it, expect } from 'vitest';
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, rmSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { planeWithRunner, waitFor, allEvents, spawnFlotilla } from './helpers.js';
import type { Job, JobEvent } from '../src/protocol/index.js';

const KINDS = new Set(['harness.started', 'message', 'tool.call', 'tool.result', 'usage', 'job.finished']);

describe('harnesses run the same task the same way', () => {
  const { plane, runnerDir } = planeWithRunner();

  async function runToEnd(agent: string, extra: { resumeJobId?: number; effort?: string; budgetUsd?: number } = {}): Promise<{ job: Job; events: JobEvent[] }> {
    const created = await plane.client.createJob({ agent, input: {}, priority: 0, ...extra });
    const job = await waitFor(`job ${created.id} to end`, async () => {
      const j = await plane.client.getJob(created.id);
      return ['succeeded', 'failed', 'cancelled', 'lost'].includes(j.status) ? j : null;
    }, 90_000, 200);
    return { job, events: await allEvents(plane.store, created.id) };
  }
  const kinds = (events: JobEvent[]) => events.filter((e) => KINDS.has(e.type)).map((e) => e.type);

  it('an agent with no offline script fails on the scripted model, naming the missing script (never a success without a model)', async () => {
    const { job } = await runToEnd('no-script');
    expect(job.status).toBe('failed');
    expect(job.error ?? '').toMatch(/no script for agent "no-script"/);
  });
  const ws = (jobId: number) => join(runnerDir, 'workspaces', `job-${jobId}`);

  let claudeJob: Job;
  let codexJob: Job;
  it('claude-code, codex and a Python command: same event kinds in the same order, same usage, same file', async () => {
    const claude = await runToEnd('hello-claude');
    const py = await runToEnd('hello-py');
    const cx = await runToEnd('hello-codex');
    claudeJob = claude.job;
    codexJob = cx.job;
    const runs = { claude, py, cx };
    const expected = ['harness.started', 'tool.call', 'usage', 'tool.result', 'message', 'usage', 'job.finished'];
    // Usage from the gateway's ledger: the script's two turns, 120+160 in, 30+5 out.
    const want = { modelCalls: 2, inputTokens: 280, outputTokens: 35, cacheReadTokens: 0, cacheWriteTokens: 0, estimatedCalls: 0 };
    for (const [name, r] of Object.entries(runs)) {
      expect(r.job, name).toMatchObject({ status: 'succeeded', result: { summary: 'done', changedFiles: ['out.txt'] } });
      expect(kinds(r.events), name).toEqual(expected);
      expect(readFileSync(join(ws(r.job.id), 'out.txt'), 'utf8'), name).toBe('hello\n');
      expect(r.job.usage, name).toMatchObject(want);
      expect(r.job.sessionId, name).toBeTruthy();
    }
    // Same model, same tokens, same price (Codex runs gpt-5-codex, priced differently).
    expect(py.job.usage?.costMicros).toBe(claude.job.usage?.costMicros);
    expect(claude.job.sessionId).toMatch(/^[0-9a-f-]{36}$/);
    expect(py.job.sessionId).toMatch(/^[0-9a-f-]{36}$/);
    // The harnesses' own usage events, one per model call: input tokens agree for all three.
    // Output tokens agree for the Python agent and Codex (30, 5); Claude Code's stream-json
    // repeats the message_start usage, whose output_tokens is a placeholder, which is why the
    // gateway's ledger above is the record.
    const usages = (ev: JobEvent[]) => ev.flatMap((e) => (e.type === 'usage' ? [e.data] : []));
    for (const r of Object.values(runs)) expect(usages(r.events).map((u) => [u.inputTokens, u.cacheReadTokens, u.cacheWriteTokens])).toEqual([[120, 0, 0], [160, 0, 0]]);
    expect(usages(py.events).map((u) => u.outputTokens)).toEqual([30, 5]);
    expect(usages(cx.events).map((u) => u.outputTokens)).toEqual([30, 5]);
  }, 240_000);

  it('codex: resume continues the same thread in the same workspace', async () => {
    const cx = codexJob;
    // Resume: same thread, same workspace, the model gets the earlier turns.
    const again = await runToEnd('hello-codex', { resumeJobId: cx.id });
    expect(again.job).toMatchObject({ status: 'succeeded', sessionId: cx.sessionId, result: { summary: 'resumed: out.txt still says hello' } });
    const r = again.events.find((e) => e.type === 'tool.result');
    expect(r?.type === 'tool.result' && r.data.output.trim()).toBe('hello');
    // Only this run's calls are reported (the thread's earlier ones are in the same rollout file).
    expect(kinds(again.events)).toEqual(['harness.started', 'tool.call', 'usage', 'tool.result', 'message', 'usage', 'job.finished']);
    expect(again.events.flatMap((e) => (e.type === 'usage' ? [[e.data.inputTokens, e.data.outputTokens]] : []))).toEqual([[200, 12], [220, 6]]);
    expect(again.job.usage).toMatchObject({ modelCalls: 2, inputTokens: 420, outputTokens: 18 });
  }, 180_000);

  it('codex: the agent commits on its job branch (the sandbox kept .git read-only: the commit failed and the fix was left uncommitted)', async () => {
    const { job, events } = await runToEnd('commit-codex');
    expect(job).toMatchObject({ status: 'succeeded', result: { summary: 'done' } });
    const r = events.find((e) => e.type === 'tool.result');
    expect(r?.type === 'tool.result' && [r.data.isError ?? false, r.data.output.trim()]).toEqual([false, 'add out.txt']);
    // the runner reports the branch's new commit: its message is the agent's
    expect(job.result?.commit).toMatch(/^[0-9a-f]{40}$/);
    const log = spawnSync('git', ['log', '--format=%H %s', '-1'], { cwd: ws(job.id), encoding: 'utf8' }).stdout.trim();
    expect(log).toBe(`${job.result?.commit} add out.txt`);
  }, 180_000);

  it('resume: the next job sees the uncommitted file and the model gets the earlier conversation', async () => {
    const first = claudeJob;
    const { job, events } = await runToEnd('hello-claude', { resumeJobId: first.id });
    // The script plays turn 3 only when the request carries the first job's two turns.
    expect(job).toMatchObject({ status: 'succeeded', sessionId: first.sessionId, runnerId: first.runnerId, result: { summary: 'resumed: out.txt still says hello' } });
    const result = events.find((e) => e.type === 'tool.result');
    expect(result?.type === 'tool.result' && result.data.output).toBe('hello');
    expect(events.find((e) => e.type === 'harness.started')?.data).toMatchObject({ workspace: ws(first.id), sessionId: first.sessionId });
    // The Python harness resumes the same way (its conversation lives in its HOME).
    const py = await runToEnd('hello-py');
    const pyAgain = await runToEnd('hello-py', { resumeJobId: py.job.id });
    expect(pyAgain.job).toMatchObject({ status: 'succeeded', sessionId: py.job.sessionId, result: { summary: 'resumed: out.txt still says hello' } });
  }, 180_000);

  it('effort tier: a run override reaches each harness as its model and effort level; unknown tiers are refused', async () => {
    // Opus at max effort reserves more per call than the agent's $1 default budget.
    const claude = await runToEnd('hello-claude', { effort: 'max', budgetUsd: 10 });
    expect(claude.job.status).toBe('succeeded');
    // The scripted model echoes the requested model: Claude Code was started with --model claude-opus-4-6.
    expect(claude.events.filter((e) => e.type === 'usage').map((e) => e.type === 'usage' && e.data.model)).toEqual(['claude-opus-4-6', 'claude-opus-4-6']);
    const py = await runToEnd('hello-py', { effort: 'medium' });
    expect(py.events.filter((e) => e.type === 'usage').map((e) => e.type === 'usage' && e.data.model)).toEqual(['claude-sonnet-4-5', 'claude-sonnet-4-5']);
    await expect(plane.client.createJob({ agent: 'hello-py', input: {}, priority: 0, effort: 'turbo' })).rejects.toThrow(/effort: unknown tier "turbo" \(from the run; known: max, high, medium\)/);
  }, 180_000);

  it('budget: a call the tree cannot afford stops the harness at once; the job waits paused for a top-up', async () => {
    // Opus at max effort may cost up to ~$1.73 a call: more than the agent's $1 budget.
    const created = await plane.client.createJob({ agent: 'hello-claude', input: {}, priority: 0, effort: 'max' });
    const job = await waitFor('the job to pause', async () => {
      const j = await plane.client.getJob(created.id);
      return j.status === 'paused' ? j : null;
    }, 60_000, 200);
    // the paused attempt's end: attempt.ended, not the job's job.finished (server/paused-attempt-end.ts)
    const fin = await waitFor('the harness to stop', async () => (await allEvents(plane.store, created.id)).find((e) => e.type === 'attempt.ended'), 30_000, 100);
    expect(fin?.type === 'attempt.ended' && fin.data).toMatchObject({ attempt: 1, status: 'failed', reason: 'budget' });
    expect(job.usage).toMatchObject({ costMicros: 0, outputTokens: 0 }); // the refused call cost nothing
    await plane.client.cancelJob(created.id);
  }, 120_000);

  it('resume: a session the harness no longer has reads resume failed (CLI exit 1); bad requests name the field', async () => {
    const first = claudeJob;
    // Remove Claude Code's stored conversation for the job's HOME.
    const projects = join(runnerDir, 'homes', `job-${first.id}`, '.claude', 'projects');
    expect(existsSync(projects)).toBe(true);
    for (const d of readdirSync(projects)) rmSync(join(projects, d), { recursive: true, force: true });
    const cli = spawnFlotilla(['run', 'hello-claude', '--resume', String(first.id)], { FLOTILLA_SERVER: plane.url, FLOTILLA_TOKEN: plane.adminToken });
    const code = await new Promise<number | null>((r) => cli.once('exit', (c) => r(c)));
    expect(cli.output()).toMatch(/resume failed/);
    expect(code).toBe(1);
    const jobs = await plane.client.listJobs({ limit: 1 });
    expect(jobs.jobs[0]).toMatchObject({ status: 'failed', endReason: 'resume_failed' });

    await expect(plane.client.createJob({ agent: 'hello-claude', input: {}, priority: 0, resumeJobId: 99_999 })).rejects.toThrow(/job 99999 does not exist/);
    const running = await plane.client.createJob({ agent: 'sleeper', input: { seconds: 30 }, priority: 0 });
    await expect(plane.client.createJob({ agent: 'hello-py', input: {}, priority: 0, resumeJobId: first.id })).rejects.toThrow(/a session resumes only in the same harness/);
    await expect(plane.client.createJob({ agent: 'sleeper', input: {}, priority: 0, resumeJobId: running.id })).rejects.toThrow(/is still (queued|assigned|running)/);
    await plane.client.cancelJob(running.id);
  }, 180_000);
});
