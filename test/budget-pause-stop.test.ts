import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BudgetView, Job, JobEvent, RunnerList } from '../src/protocol/index.js';
import { startRunner, type RunningRunner } from '../src/runner/runner.js';
import { FakeRunner, SHIPPED_AGENTS, startTestServer, type TestServer } from '../src/server/test-helpers.js';

/**
 * Issue 3 point 5 with issue 5's "a job runs on exactly one runner at a time": a job paused for
 * budget must not keep running behind the fleet's back. A real server (SQLite), a real runner
 * in-process (capacity 1, grace 1.5 s) and a command agent whose shell ignores SIGTERM (so the
 * stop needs the SIGKILL after the grace, and the window in which the paused attempt still
 * holds the runner is long enough to observe). The test spends the job's budget through the
 * gateway with the job's own token (read from a file the agent writes).
 */
const GRACE_MS = 1500;
/** How long the runner lets a paused harness exit on its own before the SIGTERM. */
const SETTLE_MS = 300;

describe('a budget pause stops the job process and holds its slot until it is gone', () => {
  let t: TestServer;
  let runner: RunningRunner;
  let dir: string;
  const log = () => join(dir, 'attempts.log');
  const go = () => join(dir, 'go');

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'flotilla-pause-stop-'));
    const agents = join(dir, 'agents');
    // holder: logs "pid cwd token" per attempt, names its session (so a resume reuses the
    // workspace), ignores SIGTERM (as does its `sleep`), and waits for the file `go`.
    const script = [
      "trap '' TERM",
      `echo "$$ $PWD $FLOTILLA_JOB_TOKEN" >> '${log()}'`,
      `echo '{"type":"session","data":{"id":"sess-hold"}}'`,
      `while [ ! -f '${go()}' ]; do sleep 0.05; done`,
      'echo done',
    ].join('\n');
    mkdirSync(join(agents, 'holder'), { recursive: true });
    writeFileSync(join(agents, 'holder', 'agent.yaml'), `name: holder\nharness: command\ncommand: [sh, -c, ${JSON.stringify(script)}]\n`);
    writeFileSync(join(agents, 'holder', 'prompt.md'), 'hold');
    // One scripted turn costs 10 × 3 + 100 × 15 = 1,530 µ$.
    writeFileSync(join(agents, 'holder', 'script.yaml'), 'turns:\n  - usage: { input_tokens: 10, output_tokens: 100 }\n    content:\n      - text: "ok"\n');
    // stubborn: the same, with onBudgetExhausted: fail (it ignores the refusal and runs on)
    mkdirSync(join(agents, 'stubborn'), { recursive: true });
    writeFileSync(join(agents, 'stubborn', 'agent.yaml'), `name: stubborn\nharness: command\nonBudgetExhausted: fail\ncommand: [sh, -c, ${JSON.stringify(script)}]\n`);
    writeFileSync(join(agents, 'stubborn', 'prompt.md'), 'hold');
    writeFileSync(join(agents, 'stubborn', 'script.yaml'), 'turns:\n  - usage: { input_tokens: 10, output_tokens: 100 }\n    content:\n      - text: "ok"\n');
    mkdirSync(join(agents, 'quick'), { recursive: true });
    writeFileSync(join(agents, 'quick', 'agent.yaml'), 'name: quick\nharness: command\ncommand: [echo, hi]\n');
    writeFileSync(join(agents, 'quick', 'prompt.md'), 'q');
    t = await startTestServer({ agentsDirs: [SHIPPED_AGENTS, agents], dispatchIntervalMs: 200, sweepIntervalMs: 500 });
    runner = await startRunner({
      serverUrl: t.url,
      registrationToken: await t.regToken(),
      workDir: join(dir, 'work'),
      name: 'r1',
      capacity: 1,
      graceMs: GRACE_MS,
      pauseSettleMs: SETTLE_MS,
      reconnect: { minMs: 20, maxMs: 100 },
    });
  });
  afterAll(async () => {
    await runner?.stop();
    await t?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const job = async (id: number) => (await (await t.api(`/api/jobs/${id}`)).json()) as Job;
  const events = (id: number): Promise<JobEvent[]> => t.store.listEvents(id, 0, 500);
  const slots = async () => ((await (await t.api('/api/runners')).json()) as RunnerList).runners.find((r) => r.name === 'r1')!;
  const attempts = () => (existsSync(log()) ? readFileSync(log(), 'utf8').trim().split('\n').filter(Boolean).map((l) => l.split(' ')) : []);
  const alive = (pid: number) => {
    try {
      process.kill(pid, 0);
      return true;
    } catch {
      return false;
    }
  };
  async function until<T>(what: string, f: () => Promise<T | undefined | false> | T | undefined | false, ms = 15_000): Promise<T> {
    const end = Date.now() + ms;
    for (;;) {
      const v = await f();
      if (v) return v;
      if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
      await new Promise((r) => setTimeout(r, 25));
    }
  }
  const callModel = (token: string) =>
    fetch(t.url + '/v1/messages', {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': token, 'anthropic-version': '2023-06-01' },
      body: JSON.stringify({ model: 'claude-sonnet-4-5', max_tokens: 100, messages: [{ role: 'user', content: 'hi' }] }),
    });

  it('kills the paused attempt within the grace, keeps its slot until then, and a top-up resumes it once in the same workspace', async () => {
    const created = (await (await t.api('/api/jobs', { json: { agent: 'holder', input: {}, budgetUsd: 0.002 } })).json()) as Job;
    const [first] = await until('attempt 1 to start', () => (attempts().length === 1 ? attempts() : undefined));
    const [pidText, cwd, token] = first!;
    const pid = Number(pidText);
    expect(alive(pid)).toBe(true);
    await until('the job to run', async () => (await job(created.id)).status === 'running');

    // $0.002: the first call fits (worst case ~1,5xx µ$) and costs 1,530 µ$; the second does not fit.
    const ok = await callModel(token!);
    expect(ok.status).toBe(200);
    await ok.json();
    const refused = await callModel(token!);
    expect(refused.status).toBe(402);
    await refused.text();
    const pausedAt = Date.now();
    expect(await job(created.id)).toMatchObject({ status: 'paused', endReason: 'budget', attempt: 1 });

    // A second job while the paused attempt's process is still stopping: the slot is held, it waits.
    const other = (await (await t.api('/api/jobs', { json: { agent: 'quick', input: {} } })).json()) as Job;
    await new Promise((r) => setTimeout(r, 500));
    expect(alive(pid)).toBe(true); // SIGTERM (after the settle time) ignored: still inside the grace
    expect(await slots()).toMatchObject({ slotsUsed: 1, capacity: 1, runningJobs: [created.id] });
    expect(await job(other.id)).toMatchObject({ status: 'queued', attempt: 0 });

    // SIGKILL after settle + grace: the process is gone, the job stays paused for budget, the slot is free.
    await until('the paused process to die', () => !alive(pid), SETTLE_MS + GRACE_MS + 3000);
    expect(Date.now() - pausedAt).toBeGreaterThanOrEqual(SETTLE_MS + GRACE_MS - 100);
    expect(Date.now() - pausedAt).toBeLessThan(SETTLE_MS + GRACE_MS + 3000);
    const paused = await until('the runner to report the attempt ended', async () => {
      const j = await job(created.id);
      return j.finishedAt !== null ? j : undefined;
    });
    expect(paused).toMatchObject({ status: 'paused', endReason: 'budget', attempt: 1, sessionId: 'sess-hold' });
    const evs = await events(created.id);
    // The paused attempt's end is not the job's end: stored as attempt.ended, no job.finished yet
    expect(evs.filter((e) => e.type === 'attempt.ended').map((e) => e.data)).toMatchObject([{ attempt: 1, status: 'cancelled', error: 'paused for budget' }]);
    expect(evs.filter((e) => e.type === 'job.finished')).toEqual([]);
    expect(evs.at(-1)).toMatchObject({ type: 'status', data: { status: 'paused', message: expect.stringMatching(/^attempt 1 stopped for the pause \(its harness was ended\); still paused for budget/) } });
    // The other job ran once, on the freed slot.
    await until('the other job to succeed', async () => (await job(other.id)).status === 'succeeded');
    expect(await job(other.id)).toMatchObject({ attempt: 1 });
    await until('the slot to be free', async () => (await slots()).slotsUsed === 0);

    // Top-up: the job resumes in its session and workspace, exactly one more attempt, and finishes.
    writeFileSync(go(), '');
    const top = (await (await t.api(`/api/jobs/${created.id}/budget`, { json: { addUsd: 1 } })).json()) as BudgetView;
    expect(top.resumed).toEqual([created.id]);
    const done = await until('the resumed job to succeed', async () => {
      const j = await job(created.id);
      return j.status === 'succeeded' ? j : undefined;
    });
    expect(done).toMatchObject({ attempt: 2, sessionId: 'sess-hold' });
    // Started is the job's first start, before the pause (the resumed attempt's own came after it)
    expect(Date.parse(done.startedAt!)).toBe(Date.parse(paused.startedAt!));
    expect(Date.parse(done.startedAt!)).toBeLessThan(pausedAt);
    const all = attempts();
    expect(all).toHaveLength(2);
    expect(all[1]![1]).toBe(cwd);
    expect(all[1]![0]).not.toBe(pidText);
    // One job.finished, the stream's last event; the paused attempt's end before it
    const final = await events(created.id);
    expect(final.filter((e) => e.type === 'job.finished' || e.type === 'attempt.ended').map((e) => `${e.type} ${String(e.data.status)}`)).toEqual(['attempt.ended cancelled', 'job.finished succeeded']);
    expect(final.at(-1)).toMatchObject({ type: 'job.finished', data: { status: 'succeeded' } });
    rmSync(go());
  });

  it('onBudgetExhausted: fail: a command agent that runs on after the refusal is stopped and the job ends failed `budget`, not paused', async () => {
    // fresh-user finding: such a job ran on, and ended `succeeded` (or failed `error`) when it exited
    rmSync(log(), { force: true });
    const created = (await (await t.api('/api/jobs', { json: { agent: 'stubborn', input: {}, budgetUsd: 0.002 } })).json()) as Job;
    const [first] = await until('attempt 1 to start', () => (attempts().length === 1 ? attempts() : undefined));
    const pid = Number(first![0]);
    await until('the job to run', async () => (await job(created.id)).status === 'running');
    expect((await callModel(first![2]!)).status).toBe(200);
    const refused = await callModel(first![2]!);
    expect(refused.status).toBe(402);
    // what the harness sees (and its transcript keeps) says the job fails; no top-up advice, which
    // would be refused (fresh-user finding)
    const said = ((await refused.json()) as { error: { message: string } }).error.message;
    expect(said).toMatch(/^budget exhausted: job tree \d+ .* The job failed: its agent says onBudgetExhausted: fail\.$/);
    expect(said).not.toContain('Top up');
    expect(await job(created.id)).toMatchObject({ status: 'running' }); // not paused
    // it ignores SIGTERM: SIGKILL after settle + grace, then the runner's report ends the job
    await until('the process to die', () => !alive(pid), SETTLE_MS + GRACE_MS + 3000);
    const ended = await until('the job to end', async () => {
      const j = await job(created.id);
      return j.status === 'failed' ? j : undefined;
    });
    expect(ended).toMatchObject({ status: 'failed', endReason: 'budget', attempt: 1 });
    expect(ended.error).toMatch(/^budget exhausted: job tree \d+ .* The job failed: its agent says onBudgetExhausted: fail\.$/);
    expect(ended.error).not.toContain('Top up');
    // it stays failed when the script would have gone on to exit 0; no second attempt
    writeFileSync(go(), '');
    await new Promise((r) => setTimeout(r, 300));
    expect(await job(created.id)).toMatchObject({ status: 'failed', endReason: 'budget', attempt: 1 });
    expect(attempts()).toHaveLength(1);
    await until('the slot to be free', async () => (await slots()).slotsUsed === 0);
    rmSync(go());
  });

  it('onBudgetExhausted: fail: a command agent that exits 0 right after the refusal still ends failed `budget` (not succeeded)', async () => {
    // fresh-user finding: an exit 0 inside the settle time ended the job `succeeded`
    rmSync(log(), { force: true });
    rmSync(go(), { force: true });
    const created = (await (await t.api('/api/jobs', { json: { agent: 'stubborn', input: {}, budgetUsd: 0.002 } })).json()) as Job;
    const [first] = await until('attempt 1 to start', () => (attempts().length === 1 ? attempts() : undefined));
    await until('the job to run', async () => (await job(created.id)).status === 'running');
    expect((await callModel(first![2]!)).status).toBe(200);
    const refused = await callModel(first![2]!);
    expect(refused.status).toBe(402);
    await refused.text();
    writeFileSync(go(), ''); // the script echoes "done" and exits 0 at once
    const ended = await until('the job to end', async () => {
      const j = await job(created.id);
      return ['failed', 'succeeded'].includes(j.status) ? j : undefined;
    });
    expect(ended).toMatchObject({ status: 'failed', endReason: 'budget', attempt: 1 });
    rmSync(go());
  });

  it('a top-up that comes while the stopped process is still dying waits for it: never two processes of one job', async () => {
    rmSync(log(), { force: true });
    const created = (await (await t.api('/api/jobs', { json: { agent: 'holder', input: {}, budgetUsd: 0.002 } })).json()) as Job;
    const [first] = await until('attempt 1 to start', () => (attempts().length === 1 ? attempts() : undefined));
    const pid = Number(first![0]);
    await until('the job to run', async () => (await job(created.id)).status === 'running');
    await (await callModel(first![2]!)).text();
    expect((await callModel(first![2]!)).status).toBe(402);
    expect(await job(created.id)).toMatchObject({ status: 'paused', endReason: 'budget' });

    // Topped up at once, inside the grace: listed as resumed, but it stays paused while the old process lives.
    const top = (await (await t.api(`/api/jobs/${created.id}/budget`, { json: { addUsd: 1 } })).json()) as BudgetView;
    expect(top.resumed).toEqual([created.id]);
    expect(await job(created.id)).toMatchObject({ status: 'paused', endReason: 'budget_resume', attempt: 1 });
    await new Promise((r) => setTimeout(r, 400));
    expect(alive(pid)).toBe(true);
    expect(attempts()).toHaveLength(1);
    expect(await job(created.id)).toMatchObject({ status: 'paused', attempt: 1 });

    // Once it is gone the job resumes by itself and finishes: one more attempt, started after the old pid died.
    await until('the paused process to die', () => !alive(pid), SETTLE_MS + GRACE_MS + 3000);
    writeFileSync(go(), '');
    const done = await until('the resumed job to succeed', async () => {
      const j = await job(created.id);
      if (j.attempt === 2 && attempts().length === 2) expect(alive(pid)).toBe(false);
      return j.status === 'succeeded' ? j : undefined;
    });
    expect(done).toMatchObject({ attempt: 2 });
    expect(attempts()).toHaveLength(2);
    expect((await events(created.id)).map((e) => (e.type === 'status' ? `${e.data.status}: ${e.data.message}` : null)).filter(Boolean)).toContainEqual(
      expect.stringMatching(/^queued: attempt 1 stopped for the pause \(its harness was ended\); room for its refused call came meanwhile \(budget topped up, or room another job held freed\): resuming session sess-hold$/),
    );
    rmSync(go());
  });
});

/**
 * The runner's side of the same story through the protocol (a FakeRunner, so the report can
 * race the stop): the pause sends the stop (`job.cancel` without `discard`), the paused attempt
 * keeps its slot until `job.finished` arrives, and that report is never dropped: a success
 * that beat the stop ends the job `succeeded`; any other ending keeps it paused, frees the slot
 * and says so in a `status` event; a heartbeat that still reports the paused attempt gets the
 * stop again (it may have been missed).
 */
describe('a job.finished for a budget-paused job', () => {
  let t: TestServer;
  let dir: string;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'flotilla-pause-report-'));
    mkdirSync(join(dir, 'holder'), { recursive: true });
    writeFileSync(join(dir, 'holder', 'agent.yaml'), 'name: holder\nharness: command\ncommand: [echo, hi]\n');
    writeFileSync(join(dir, 'holder', 'prompt.md'), 'hold');
    writeFileSync(join(dir, 'holder', 'script.yaml'), 'turns:\n  - usage: { input_tokens: 10, output_tokens: 100 }\n    content:\n      - text: "ok"\n');
    t = await startTestServer({ agentsDirs: [SHIPPED_AGENTS, dir] });
  });
  afterAll(async () => {
    await t?.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const at = () => new Date().toISOString();
  const job = async (id: number) => (await (await t.api(`/api/jobs/${id}`)).json()) as Job;
  const used = async (r: FakeRunner) => ((await (await t.api('/api/runners')).json()) as RunnerList).runners.find((x) => x.id === r.runnerId)!.slotsUsed;
  const callModel = (token: string) =>
    fetch(t.url + '/v1/messages', {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': token, 'anthropic-version': '2023-06-01' },
      body: JSON.stringify({ model: 'claude-sonnet-4-5', max_tokens: 100, messages: [{ role: 'user', content: 'hi' }] }),
    });

  /** A holder job running on `r` (attempt 1), paused by a refused call; returns its id after checking the stop. */
  async function pausedOn(r: FakeRunner): Promise<number> {
    const created = (await (await t.api('/api/jobs', { json: { agent: 'holder', input: {}, budgetUsd: 0.002 } })).json()) as Job;
    const a = await r.next('job.assign', (f) => f.assignment.jobId === created.id);
    r.send({ type: 'job.accepted', jobId: created.id, attempt: 1 });
    r.send({ type: 'job.events', jobId: created.id, attempt: 1, events: [{ rseq: 1, at: at(), type: 'harness.started', data: { harness: 'command', pid: 1 } }] });
    await r.next('ack', (f) => f.jobId === created.id);
    await (await callModel(a.assignment.token)).text();
    expect((await callModel(a.assignment.token)).status).toBe(402);
    const stop = await r.next('job.cancel', (f) => f.jobId === created.id);
    expect(stop).toEqual({ type: 'job.cancel', jobId: created.id, attempt: 1, reason: 'paused for budget', pause: true });
    expect(await job(created.id)).toMatchObject({ status: 'paused', endReason: 'budget', finishedAt: null });
    return created.id;
  }

  it('a success that beat the stop ends the job succeeded with its result; the slot is freed', async () => {
    const r = await FakeRunner.start(t, { capacity: 2 });
    await r.hello({ capacity: 2 });
    const id = await pausedOn(r);
    expect(await used(r)).toBe(1);
    // A heartbeat still reporting it: the stop is repeated (not discarding its final events).
    r.send({ type: 'heartbeat', running: [{ jobId: id, attempt: 1 }] });
    expect(await r.next('job.cancel', (f) => f.jobId === id)).toMatchObject({ attempt: 1, pause: true });
    expect((r.frames.filter((f) => f.type === 'job.cancel') as Array<{ discard?: boolean }>).some((f) => f.discard)).toBe(false);
    r.send({ type: 'job.events', jobId: id, attempt: 1, events: [{ rseq: 2, at: at(), type: 'job.finished', data: { status: 'succeeded', result: { summary: 'held and done' } } }] });
    await r.next('ack', (f) => f.jobId === id && f.upTo === 2);
    expect(await job(id)).toMatchObject({ status: 'succeeded', endReason: null, attempt: 1, result: { summary: 'held and done' } });
    expect(await used(r)).toBe(0);
    await r.close();
  });

  it('any other ending keeps it paused for the top-up, frees the slot and leaves a status event', async () => {
    const r = await FakeRunner.start(t, { capacity: 2 });
    await r.hello({ capacity: 2 });
    const id = await pausedOn(r);
    r.send({ type: 'job.events', jobId: id, attempt: 1, events: [{ rseq: 2, at: at(), type: 'job.finished', data: { status: 'failed', reason: 'budget', error: 'API Error: 402', sessionId: 'sess-x' } }] });
    await r.next('ack', (f) => f.jobId === id && f.upTo === 2);
    const ended = async () => {
      for (let i = 0; i < 200; i++) {
        const j = await job(id);
        if (j.finishedAt !== null) return j;
        await new Promise((res) => setTimeout(res, 20));
      }
      throw new Error('the paused attempt was never marked ended');
    };
    expect(await ended()).toMatchObject({ status: 'paused', endReason: 'budget', sessionId: 'sess-x' });
    expect(await used(r)).toBe(0);
    const evs = await t.store.listEvents(id, 0, 100);
    expect(evs.at(-2)).toMatchObject({ type: 'attempt.ended', data: { attempt: 1, status: 'failed', reason: 'budget', error: 'API Error: 402', sessionId: 'sess-x' } });
    expect(evs.filter((e) => e.type === 'job.finished')).toEqual([]);
    expect(evs.at(-1)).toMatchObject({ type: 'status', data: { status: 'paused', message: `attempt 1's harness exited on the budget refusal (failed, budget); still paused for budget: its workspace and session are kept, a top-up resumes it, or room other jobs hold coming back (flotilla budget ${id} says which)` } });
    // Reported ended: heartbeats no longer get the stop, and the top-up resumes it at once in its session.
    const top = (await (await t.api(`/api/jobs/${id}/budget`, { json: { addUsd: 1 } })).json()) as BudgetView;
    expect(top.resumed).toEqual([id]);
    expect((await r.next('job.assign', (f) => f.assignment.jobId === id)).assignment).toMatchObject({ attempt: 2, resumeSessionId: 'sess-x' });
    await r.close();
  });
});

/**
 * A runner that stops reporting a paused attempt without ever sending its `job.finished` (e.g.
 * it restarted and killed the old process group at start): after the heartbeat timeout the
 * slot is freed and the job stays paused, so a top-up is not deferred forever.
 */
describe('a paused attempt its runner no longer reports', () => {
  let t: TestServer;
  let dir: string;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'flotilla-pause-gone-'));
    mkdirSync(join(dir, 'holder'), { recursive: true });
    writeFileSync(join(dir, 'holder', 'agent.yaml'), 'name: holder\nharness: command\ncommand: [echo, hi]\n');
    writeFileSync(join(dir, 'holder', 'prompt.md'), 'hold');
    writeFileSync(join(dir, 'holder', 'script.yaml'), 'turns:\n  - usage: { input_tokens: 10, output_tokens: 100 }\n    content:\n      - text: "ok"\n');
    t = await startTestServer({ agentsDirs: [SHIPPED_AGENTS, dir], heartbeatIntervalMs: 200, heartbeatTimeoutMs: 800, sweepIntervalMs: 200 });
  });
  afterAll(async () => {
    await t?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('is released after the heartbeat timeout: paused, slot free, a status event; the top-up then resumes it', async () => {
    const r = await FakeRunner.start(t);
    await r.hello();
    const beat = setInterval(() => r.send({ type: 'heartbeat', running: [] }), 150);
    try {
      const created = (await (await t.api('/api/jobs', { json: { agent: 'holder', input: {}, budgetUsd: 0.002 } })).json()) as Job;
      const a = await r.next('job.assign', (f) => f.assignment.jobId === created.id);
      r.send({ type: 'job.accepted', jobId: created.id, attempt: 1 });
      r.send({ type: 'job.events', jobId: created.id, attempt: 1, events: [{ rseq: 1, at: new Date().toISOString(), type: 'harness.started', data: { harness: 'command', pid: 1, sessionId: 'sess-g' } }] });
      await r.next('ack', (f) => f.jobId === created.id);
      const call = () =>
        fetch(t.url + '/v1/messages', {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-api-key': a.assignment.token, 'anthropic-version': '2023-06-01' },
          body: JSON.stringify({ model: 'claude-sonnet-4-5', max_tokens: 100, messages: [{ role: 'user', content: 'hi' }] }),
        });
      await (await call()).text();
      expect((await call()).status).toBe(402);
      expect(await t.store.getJob(created.id)).toMatchObject({ status: 'paused', finishedAt: null });
      const deadline = Date.now() + 5000;
      let row = await t.store.getJob(created.id);
      while (row!.finishedAt === null && Date.now() < deadline) {
        await new Promise((res) => setTimeout(res, 50));
        row = await t.store.getJob(created.id);
      }
      expect(row).toMatchObject({ status: 'paused', endReason: 'budget' });
      expect(row!.finishedAt).not.toBeNull();
      const evs = await t.store.listEvents(created.id, 0, 100);
      expect(evs.at(-1)).toMatchObject({ type: 'status', data: { status: 'paused', message: expect.stringMatching(/^runner fake no longer runs it \(\d+(\.\d)?s\); still paused for budget/) } });
      const top = (await (await t.api(`/api/jobs/${created.id}/budget`, { json: { addUsd: 1 } })).json()) as BudgetView;
      expect(top.resumed).toEqual([created.id]);
      expect((await r.next('job.assign', (f) => f.assignment.jobId === created.id)).assignment).toMatchObject({ attempt: 2, resumeSessionId: 'sess-g' });
    } finally {
      clearInterval(beat);
      await r.close();
    }
  });
});
