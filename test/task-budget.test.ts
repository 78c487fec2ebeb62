/**
 * Budgets per task (issue 3: "budgets per job tree, and per task"), over real HTTP against a
 * real control plane (SQLite, the gateway's scripted model) with a fake runner, and the built
 * CLI as a child process: a task's budget covers all its turns, each turn's tree gets what is
 * left, a turn paused for budget reads `paused` in the task and resumes on a task top-up, a
 * top-up of a turn's tree raises the task's budget too, and with nothing left no turn starts
 * until a top-up. Needs `npx tsc -p tsconfig.build.json` first (bin/flotilla.js runs dist/).
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BudgetView, Job, Task } from '../src/protocol/index.js';
import { runFlotilla } from './helpers.js';
import { FakeRunner, SHIPPED_AGENTS, startTestServer, TEST_AGENTS, type TestServer } from '../src/server/test-helpers.js';

const GPU = { gpu: 'a100' };

describe('task budgets', () => {
  let t: TestServer;
  let r: FakeRunner;
  let agents: string;
  beforeAll(async () => {
    // gpu-job (defaultBudgetUsd 0.5, no task budget) and task-bot, whose tasks get $0.25 unless given one
    agents = await mkdtemp(join(tmpdir(), 'task-budget-agents-'));
    const write = async (name: string, yaml: string) => {
      await mkdir(join(agents, name), { recursive: true });
      await writeFile(join(agents, name, 'agent.yaml'), yaml);
      await writeFile(join(agents, name, 'prompt.md'), `Run ${name}.`);
    };
    await write('gpu-job', TEST_AGENTS['gpu-job']!);
    // one scripted reply of 100 input and 10 output tokens: $3 and $15 per MTok (TEST_GATEWAY's prices) → 450 µ$
    await writeFile(join(agents, 'gpu-job', 'script.yaml'), ['model: claude-haiku-4-5', 'turns:', '  - usage: { input_tokens: 100, output_tokens: 10 }', '    content:', '      - text: "done"'].join('\n'));
    await write('task-bot', ['name: task-bot', 'harness: command', 'command: [echo, hi]', 'limits: { defaultBudgetUsd: 0.5, taskBudgetUsd: 0.25 }', 'runnerLabels: { gpu: a100 }'].join('\n'));
    t = await startTestServer({ taskPollMs: 100, dispatchIntervalMs: 100, agentsDirs: [SHIPPED_AGENTS, agents] });
    r = await FakeRunner.start(t, { name: 'task-runner', labels: GPU, capacity: 4 });
    await r.hello({ name: 'task-runner', labels: GPU, capacity: 4 });
  });
  afterAll(async () => {
    r.close();
    await t.close();
    await rm(agents, { recursive: true, force: true });
  });

  /** The built CLI against the test server, without FLOTILLA_* variables of this process. */
  const cli = (...args: string[]) => runFlotilla([...args, '--server', t.url, '--token', t.admin], Object.fromEntries(Object.keys(process.env).filter((k) => k.startsWith('FLOTILLA_')).map((k) => [k, undefined])));
  /** Takes the next assignment of job `id`, starts it with session `sess-<id>`; its token and attempt. */
  const start = (id: number) => r.startJob(id, () => `sess-${id}`);
  const finish = (id: number, attempt: number, status: 'succeeded' | 'failed', reason?: string) =>
    r.events(id, attempt, { type: 'job.finished', data: { status, ...(reason ? { reason, error: 'API Error: 402' } : {}), sessionId: `sess-${id}` } });
  const task = async (id: number) => ((await (await t.api(`/api/tasks/${id}`)).json()) as { task: Task }).task;
  const tree = async (jobId: number) => ((await (await t.api(`/api/jobs/${jobId}/budget`)).json()) as BudgetView).budget;
  /** Waits until task `id` satisfies `ok`; the task then. */
  async function until(id: number, ok: (x: Task) => boolean, what: string): Promise<Task> {
    for (let i = 0; i < 200; i++) {
      const x = await task(id);
      if (ok(x)) return x;
      await new Promise((res) => setTimeout(res, 50));
    }
    throw new Error(`task ${id} never ${what}: ${JSON.stringify(await task(id))}`);
  }
  /** Charges `micros` to tree `rootId`, as a settled model call of its root job (the turn) does: a turn resumed for budget may spend the room it holds (store/budget-holds.ts). */
  async function spend(rootId: number, micros: number) {
    const res = await t.store.reserveBudget(rootId, micros, Date.now(), 60_000, undefined, undefined, rootId);
    if (!res?.ok) throw new Error(`could not reserve ${micros} on tree ${rootId}`);
    await t.store.settleBudget(rootId, res.reservationId, micros, Date.now());
  }

  it('each turn gets what is left; a paused turn reads paused and resumes on a task top-up; with nothing left no turn starts', async () => {
    const created = await cli('tasks', 'create', 'gpu-job', '--title', 'budgeted', '--budget', '0.05', '--prompt', 'first', '--json');
    expect([created.code, created.err]).toEqual([0, '']);
    const t0 = (JSON.parse(created.out) as { task: Task }).task;
    expect([t0.budgetMicros, t0.spentMicros, t0.reservedMicros]).toEqual([50_000, 0, 0]);
    const j1 = t0.currentJobId!;
    // turn 1: the whole task budget (not the agent's $0.5 default)
    expect((await tree(j1)).limitMicros).toBe(50_000);
    const a1 = await start(j1);
    await spend(j1, 30_000);
    await finish(j1, a1.attempt, 'succeeded');
    expect(await until(t0.id, (x) => x.status === 'idle' && x.currentJobId === null, 'went idle')).toMatchObject({ spentMicros: 30_000, budgetMicros: 50_000, turnJobStatus: null });

    // turn 2: $0.05 − $0.03 = $0.02
    expect((await cli('tasks', 'send', String(t0.id), 'second')).code).toBe(0);
    const t2 = await until(t0.id, (x) => x.currentJobId !== null, 'started turn 2');
    const j2 = t2.currentJobId!;
    expect((await tree(j2)).limitMicros).toBe(20_000);
    const a2 = await start(j2);
    // a call whose worst case (sonnet, 2,000 output tokens at $15/MTok = $0.03) does not fit: refused, the turn pauses
    const res = await fetch(t.url + '/v1/messages', {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': a2.token, 'anthropic-version': '2023-06-01' },
      body: JSON.stringify({ model: 'claude-sonnet-4-5', max_tokens: 2000, messages: [{ role: 'user', content: 'fix it' }] }),
    });
    expect(res.status).toBe(402);
    await finish(j2, a2.attempt, 'failed', 'budget');
    await r.next('job.cancel', (f) => f.jobId === j2, 10_000);
    const paused = await until(t0.id, (x) => x.turnJobStatus === 'paused', 'showed its paused turn');
    expect([paused.status, paused.currentJobId]).toEqual(['running', j2]);
    const shown = await cli('tasks', 'show', String(t0.id));
    expect(shown.out).toContain(`  turns:      2 (job ${j2} paused)`);
    expect(shown.out).toContain(`  paused:     turn job ${j2} is paused for budget; a top-up resumes it: flotilla tasks budget ${t0.id} --add <USD>`);
    expect(shown.out).toContain('  budget:     $0.050000 for all its turns; spent $0.030000; $0.020000 left');
    expect((await cli('tasks')).out).toMatch(new RegExp(`^${t0.id}\\s+gpu-job\\s+running\\s+budgeted\\s+2\\s+${j2} \\(paused\\)\\s+-\\s+\\$0\\.030000 of \\$0\\.050000$`, 'm'));
    // waiting for the paused attempt's exit to be settled (paused-exit.ts), then the top-up resumes it at once
    for (let i = 0; (await t.store.getJob(j2))?.finishedAt === null; i++) {
      if (i > 100) throw new Error('paused attempt never ended');
      await new Promise((res2) => setTimeout(res2, 50));
    }

    // a task top-up: task budget and the running turn's tree both +$1; the turn resumes in its session
    const up = await cli('tasks', 'budget', String(t0.id), '--add', '1');
    expect([up.code, up.err]).toEqual([0, '']);
    expect(up.out).toContain(`task ${t0.id}: budget $1.050000 for all its turns; spent $0.030000; $1.020000 left`);
    expect(up.out).toContain(`resumed:   job ${j2}\n`);
    expect((await tree(j2)).limitMicros).toBe(1_020_000);
    const resumed = await r.next('job.assign', (f) => f.assignment.jobId === j2, 10_000);
    expect(resumed.assignment.resumeSessionId).toBe(`sess-${j2}`);
    const a2b = { token: resumed.assignment.token, attempt: resumed.assignment.attempt };
    r.send({ type: 'job.accepted', jobId: j2, attempt: a2b.attempt });
    await r.events(j2, a2b.attempt, { type: 'harness.started', data: { harness: 'claude-code', pid: 2, sessionId: `sess-${j2}` } });
    await until(t0.id, (x) => x.turnJobStatus === 'running', 'resumed its turn');

    // a top-up of the turn's tree (flotilla budget JOB --add) raises the task's budget as much
    expect((await cli('budget', String(j2), '--add', '0.01')).code).toBe(0);
    expect((await tree(j2)).limitMicros).toBe(1_030_000);
    expect((await task(t0.id)).budgetMicros).toBe(1_060_000);
    // --set while a turn runs: refused, nothing changed
    const set = await cli('tasks', 'budget', String(t0.id), '--set', '5');
    expect([set.code, set.err]).toEqual([1, `flotilla: task ${t0.id}'s turn (job ${j2}) is running: a budget is set between turns; add to it with flotilla tasks budget ${t0.id} --add <USD>\n`]);
    expect((await task(t0.id)).budgetMicros).toBe(1_060_000);

    // the turn spends all its tree has: nothing is left for a next turn
    await spend(j2, 1_030_000);
    await finish(j2, a2b.attempt, 'succeeded');
    await until(t0.id, (x) => x.status === 'idle' && x.currentJobId === null, 'ended turn 2');
    const refused = await cli('tasks', 'send', String(t0.id), 'third');
    expect(refused.code).toBe(1);
    expect(refused.err).toBe(
      `flotilla: task ${t0.id}: prompt queued, but its turn cannot start: task budget spent: its turns have spent $1.060000 of its $1.060000; the next turn starts after a top-up: flotilla tasks budget ${t0.id} --add <USD>\n`,
    );
    expect(await task(t0.id)).toMatchObject({ status: 'idle', currentJobId: null, queuedPrompts: 1, turns: 2 });
    // a top-up starts the held-back turn with exactly what was added
    const more = await cli('tasks', 'budget', String(t0.id), '--add', '0.001');
    expect(more.code).toBe(0);
    const t3 = await until(t0.id, (x) => x.currentJobId !== null, 'started turn 3');
    expect([t3.turns, t3.error, t3.queuedPrompts]).toEqual([3, null, 0]);
    expect((await tree(t3.currentJobId!)).limitMicros).toBe(1_000);
    // the jobs API shows turn 2's tree as topped up: $0.02 + $1 + $0.01
    expect(((await (await t.api(`/api/jobs/${j2}`)).json()) as Job).budgetMicros).toBe(1_030_000);
  });

  it("a top-up of a turn's tree may not take its task's budget past the $100,000 cap (the tree's own was below it)", async () => {
    const created = (await (await t.api('/api/tasks', { json: { agent: 'gpu-job', prompt: 'one', budgetUsd: 100_000 } })).json()) as Task;
    const j1 = created.currentJobId!;
    const a1 = await start(j1);
    await spend(j1, 10);
    await finish(j1, a1.attempt, 'succeeded');
    await until(created.id, (x) => x.currentJobId === null, 'ended turn 1');
    await t.api(`/api/tasks/${created.id}/send`, { json: { prompt: 'two' } });
    const j2 = (await until(created.id, (x) => x.currentJobId !== null, 'started turn 2')).currentJobId!;
    expect((await tree(j2)).limitMicros).toBe(100_000_000_000 - 10);
    const refused = await cli('budget', String(j2), '--add', '0.00001');
    expect([refused.code, refused.err]).toEqual([
      1,
      `flotilla: addUsd: job tree ${j2} is a turn of task ${created.id}, whose budget would be $100000.000010, over the cap of $100,000 (it is at the cap already: nothing can be added)\n`,
    ]);
    expect([(await tree(j2)).limitMicros, (await task(created.id)).budgetMicros]).toEqual([100_000_000_000 - 10, 100_000_000_000]);
    const a2 = await start(j2);
    await finish(j2, a2.attempt, 'succeeded'); // its runner slot free for the next test
  });

  it('a running turn whose child is paused for budget says so; a task top-up resumes the child', async () => {
    const created = (await (await t.api('/api/tasks', { json: { agent: 'gpu-job', title: 'fan-out', prompt: 'go', budgetUsd: 0.02 } })).json()) as Task;
    const turnJob = created.currentJobId!;
    const a = await start(turnJob);
    // the turn starts a child in its tree; the child's call (worst case $0.03 > the $0.02 left) is refused: the child pauses
    const res = await t.api('/api/jobs', { token: a.token, json: { agent: 'gpu-job', input: {} } });
    expect(res.status).toBe(201);
    const child = (await res.json()) as Job;
    const c = await start(child.id);
    const call = await fetch(t.url + '/v1/messages', {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': c.token, 'anthropic-version': '2023-06-01' },
      body: JSON.stringify({ model: 'claude-sonnet-4-5', max_tokens: 2000, messages: [{ role: 'user', content: 'fix it' }] }),
    });
    expect(call.status).toBe(402);
    await finish(child.id, c.attempt, 'failed', 'budget');
    await r.next('job.cancel', (f) => f.jobId === child.id, 10_000);
    const waiting = await until(created.id, (x) => x.turnPausedJobs === 1, 'counted its paused child');
    expect([waiting.status, waiting.turnJobStatus]).toEqual(['running', 'running']);
    const shown = await cli('tasks', 'show', String(created.id));
    expect(shown.out).toContain(`  paused:     1 job that turn job ${turnJob} started is paused for budget; a top-up resumes it: flotilla tasks budget ${created.id} --add <USD> (flotilla budget ${turnJob} names them)`);
    expect((await cli('tasks')).out).toMatch(new RegExp(`^${created.id}\\s+gpu-job\\s+running\\s+fan-out\\s+1\\s+${turnJob} \\(1 paused\\)`, 'm'));
    for (let i = 0; (await t.store.getJob(child.id))?.finishedAt === null; i++) {
      if (i > 100) throw new Error('paused attempt never ended');
      await new Promise((res2) => setTimeout(res2, 50));
    }
    // the task top-up goes to the turn's tree: the child resumes in its session
    const up = await cli('tasks', 'budget', String(created.id), '--add', '1', '--json');
    expect(up.code).toBe(0);
    const upJson = JSON.parse(up.out) as { task: Task; resumed: number[] };
    expect([upJson.resumed, upJson.task.id, upJson.task.budgetMicros]).toEqual([[child.id], created.id, 1_020_000]);
    const again = await r.next('job.assign', (f) => f.assignment.jobId === child.id, 10_000);
    expect(again.assignment.resumeSessionId).toBe(`sess-${child.id}`);
    expect((await task(created.id)).turnPausedJobs).toBe(0);
    // both end, their runner slots free for the next test
    r.send({ type: 'job.accepted', jobId: child.id, attempt: again.assignment.attempt });
    await finish(child.id, again.assignment.attempt, 'succeeded');
    await finish(turnJob, a.attempt, 'succeeded');
  });

  it("a task without a budget gives each turn its agent's default; the agent's taskBudgetUsd is a task's default; bad input is refused", async () => {
    const plain = (await (await t.api('/api/tasks', { json: { agent: 'gpu-job', prompt: 'go' } })).json()) as Task;
    expect([plain.budgetMicros, (await tree(plain.currentJobId!)).limitMicros]).toEqual([null, 500_000]);
    const noBudget = await cli('tasks', 'budget', String(plain.id), '--add', '1');
    expect([noBudget.code, noBudget.err]).toEqual([
      1,
      `flotilla: task ${plain.id} has no budget of its own (each turn gets its agent's defaultBudgetUsd): set one with flotilla tasks budget ${plain.id} --set <USD>, or top up a turn's tree with flotilla budget JOB --add <USD>\n`,
    ]);
    expect((await tree(plain.currentJobId!)).limitMicros).toBe(500_000);
    // its turn's model call is counted under the task by `costs --by task`, as much as its tree spent
    const { token } = await start(plain.currentJobId!);
    const call = await fetch(t.url + '/v1/messages', {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': token, 'anthropic-version': '2023-06-01' },
      body: JSON.stringify({ model: 'claude-haiku-4-5', max_tokens: 64, messages: [{ role: 'user', content: 'hello' }] }),
    });
    expect([call.status, call.status === 200 ? '' : await call.text()]).toEqual([200, '']);
    const spent = (await tree(plain.currentJobId!)).spentMicros;
    expect(spent).toBe(450);
    const costs = await cli('costs', '--by', 'task', '--json');
    const rows = (JSON.parse(costs.out) as { rows: { key: string; name?: string; calls: number; costMicros: number }[] }).rows;
    expect(rows.find((x) => x.key === String(plain.id))).toEqual(expect.objectContaining({ name: 'gpu-job', calls: 1, costMicros: spent }));
    expect((await task(plain.id)).spentMicros).toBe(spent);

    const bot = (await (await t.api('/api/tasks', { json: { agent: 'task-bot' } })).json()) as Task;
    expect(bot.budgetMicros).toBe(250_000);
    const given = (await (await t.api('/api/tasks', { json: { agent: 'task-bot', budgetUsd: 0.1 } })).json()) as Task;
    expect(given.budgetMicros).toBe(100_000);
    // between turns --set takes
    const set = await cli('tasks', 'budget', String(bot.id), '--set', '2.5', '--json');
    expect(JSON.parse(set.out) as { task: Task; resumed: number[] }).toMatchObject({ task: { budgetMicros: 2_500_000 }, resumed: [] });

    const both = await t.api(`/api/tasks/${bot.id}/budget`, { json: { addUsd: 1, budgetUsd: 2 } });
    expect([both.status, ((await both.json()) as { error: { message: string } }).error.message]).toEqual([400, expect.stringContaining('exactly one of addUsd')]);
    const none = await cli('tasks', 'budget', String(bot.id));
    // a usage error (exit 2), from flags or their variables
    expect([none.code, none.err]).toEqual([2, 'flotilla: give exactly one of --add <usd> (add to the budget; or FLOTILLA_TASK_BUDGET_ADD) and --set <usd> (set it; or FLOTILLA_TASK_BUDGET_SET)\n']);
    const twoWays = await cli('tasks', 'budget', String(bot.id), '--add', '1', '--set', '2', '--json');
    expect([twoWays.code, JSON.parse(twoWays.err)]).toEqual([2, { error: { message: 'give exactly one of --add <usd> (add to the budget; or FLOTILLA_TASK_BUDGET_ADD) and --set <usd> (set it; or FLOTILLA_TASK_BUDGET_SET)', code: 'usage' } }]);
    expect((await cli('tasks', 'budget', String(bot.id), '--add', '0')).code).toBe(2);
    const cap = await t.api(`/api/tasks/${bot.id}/budget`, { json: { addUsd: 99_999 } });
    expect([cap.status, ((await cap.json()) as { error: { message: string; field: string } }).error]).toEqual([
      400,
      { code: 'invalid_request', field: 'addUsd', message: `addUsd: task ${bot.id}, whose budget would be $100001.500000, over the cap of $100,000 (it is $2.500000: at most $99997.500000 can be added)` },
    ]);
    expect((await task(bot.id)).budgetMicros).toBe(2_500_000);
    expect((await t.api('/api/tasks/999999/budget', { json: { addUsd: 1 } })).status).toBe(404);
    const badCreate = await t.api('/api/tasks', { json: { agent: 'gpu-job', budgetUsd: 0 } });
    expect(badCreate.status).toBe(400);
  });
});
