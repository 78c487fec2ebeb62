import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../src/server/test-helpers.js';
import { runCli } from '../src/cli/test-io.js';

// Fresh-user faults (FX2) through the CLI against a real server (SQLite, HTTP): refused input
// exits non-zero with a message saying what is wrong; `tasks send` says when a task cannot run.

let t: TestServer;
const saved = { ...process.env };
const run = (...args: string[]) => runCli([...args, '--server', t.url, '--token', t.admin]);

beforeAll(async () => {
  for (const k of Object.keys(process.env)) if (k.startsWith('FLOTILLA_')) delete process.env[k];
  t = await startTestServer({ taskPollMs: 100 });
});
afterAll(async () => {
  process.env = { ...saved };
  await t.close();
});

describe('flotilla tasks / receivers / runners input checks', () => {
  it('refuses a task or an assign policy of an agent that cannot take a task turn, and accepts issue-worker', async () => {
    const bad = await run('tasks', 'create', 'test-fixer', '--prompt', 'fix it');
    expect(bad.code).toBe(1);
    expect(bad.err).toContain('agent test-fixer cannot run tasks');
    expect(bad.err).toContain('must allow taskPrompt (string), taskId and taskTurn');
    const rec = await run('receivers', 'create', 'acme', '--provider', 'github', '--assign-login', 'my-bot', '--assign-agent', 'test-fixer');
    expect([rec.code, rec.err.includes('cannot run tasks')]).toEqual([1, true]);
    expect(await t.store.listReceivers()).toEqual([]);
    const good = await run('receivers', 'create', 'acme', '--provider', 'github', '--assign-login', 'my-bot', '--assign-agent', 'issue-worker');
    expect(good.code).toBe(0);
    expect(good.out).toContain('start a task of agent issue-worker');
    const ok = await run('tasks', 'create', 'issue-worker', '--title', 'works', '--json');
    expect(ok.code).toBe(0);
  });

  it('refuses an assignment policy on a generic receiver and a completed fallback task (both did nothing), creating nothing', async () => {
    const generic = await run('receivers', 'create', 'r11', '--provider', 'generic', '--auth', 'bearer', '--key-expr', 'payload.k', '--assign-login', 'bot', '--assign-agent', 'issue-worker');
    expect([generic.code, generic.err]).toEqual([1, 'flotilla: policies.assign: only github and gitea receivers take an assignment policy; a generic receiver routes by its keyExpr\n']);
    const done = await t.store.createTask({ agent: 'issue-worker', title: 'done', input: {}, keys: ['done-key'], coalesceMs: 1000, now: Date.now() });
    await t.store.completeTask(done.id, Date.now());
    const fallback = await run('receivers', 'create', 'r10', '--provider', 'github', '--fallback-task', String(done.id));
    expect([fallback.code, fallback.err]).toEqual([1, `flotilla: fallbackTaskId: task ${done.id} is completed and takes no events; reopen it or pick another\n`]);
    expect((await t.store.listReceivers()).map((r) => r.name)).not.toContain('r10');
    expect((await t.store.listReceivers()).map((r) => r.name)).not.toContain('r11');
  });

  it("refuses a task input holding a field every turn sets (taskPrompt, taskId, taskTurn), creating nothing (it was overwritten unseen: fresh-user finding)", async () => {
    const before = (await t.store.listTasks({ limit: 200 })).length;
    for (const field of ['taskId', 'taskPrompt', 'taskTurn']) {
      const bad = await run('tasks', 'create', 'issue-worker', '--input', JSON.stringify({ [field]: 'x' }));
      expect([bad.code, bad.err], field).toEqual([1, `flotilla: input.${field}: set by every turn of the task (taskPrompt, taskId, taskTurn); leave it out of the task's input\n`]);
    }
    expect((await t.store.listTasks({ limit: 200 })).length).toBe(before);
  });

  it('refuses empty values: --assign-login "", --prompt "", --key "" (exit 2, nothing created)', async () => {
    const before = (await t.store.listTasks({ limit: 200 })).length;
    const empty = await run('receivers', 'create', 'g3', '--provider', 'github', '--assign-login', '', '--assign-agent', 'issue-worker');
    expect([empty.code, empty.err]).toEqual([2, 'flotilla: --assign-login is empty: give a value, or leave --assign-login out\n']);
    expect((await t.store.listReceivers()).map((r) => r.name)).not.toContain('g3');
    const prompt = await run('tasks', 'create', 'issue-worker', '--prompt', '');
    expect(prompt.code).toBe(2);
    expect(prompt.err).toBe('flotilla: --prompt is empty: give a value, or leave --prompt out\n');
    const key = await run('tasks', 'create', 'issue-worker', '--key', '');
    expect([key.code, key.out, key.err]).toEqual([2, '', 'flotilla: --key is empty: give a value, or leave --key out\n']);
    expect((await t.store.listTasks({ limit: 200 })).length).toBe(before);
    const long = await run('receivers', 'create', 'a'.repeat(5000), '--provider', 'github');
    expect([long.code, long.err.includes('at most 63 characters')]).toEqual([1, true]);
  });

  it('tasks send says the state of a task that cannot run now', async () => {
    const created = JSON.parse((await run('tasks', 'create', 'issue-worker', '--json')).out) as { task: { id: number } };
    const id = created.task.id;
    expect((await run('tasks', 'suspend', String(id))).code).toBe(0);
    const s = await run('tasks', 'send', String(id), 'hello');
    expect(s.code).toBe(0);
    expect(s.out).toBe(`task ${id}: prompt queued; suspended, 1 waiting — the task is suspended: it runs after \`flotilla tasks resume ${id}\`\n`);
    // A task stored before the check (an agent that cannot take a turn): the wake fails, and send says why, exit 1.
    const old = await t.store.createTask({ agent: 'test-fixer', title: 'old', input: {}, keys: [], coalesceMs: 0, now: Date.now() });
    const f = await run('tasks', 'send', String(old.id), 'go');
    expect(f.code).toBe(1);
    expect(f.err).toContain(`task ${old.id}: prompt queued, but its turn cannot start: input for agent test-fixer`);
    expect(f.err).toContain("a task agent's inputSchema must allow taskPrompt, taskId, taskTurn");
  });

  it('runners set with no option says what is missing (exit 2)', async () => {
    const r = await run('runners', 'set', 'some-runner');
    expect(r.code).toBe(2);
    expect(r.err).toContain('give --capacity <1-4|auto> (or FLOTILLA_RUNNER_CAPACITY) and/or --browser-slots <1-4|auto> (or FLOTILLA_RUNNER_BROWSER_SLOTS)');
  });
});
