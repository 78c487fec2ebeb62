import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../src/server/test-helpers.js';
import { runCli } from '../src/cli/test-io.js';

// `flotilla tasks ...` and `flotilla receivers ...` against a real server (SQLite, HTTP).

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

describe('flotilla tasks / receivers', () => {
  it('create, send (queued in order), show, suspend, resume, stop, complete, list; --json; errors exit 1', async () => {
    const c = await run('tasks', 'create', 'gpu-job', '--title', 'fix flaky', '--key', 'github.com/acme/api/issues/5', '--prompt', 'first thing', '--json');
    expect(c.code).toBe(0);
    const task = (JSON.parse(c.out) as { task: { id: number; status: string; currentJobId: number } }).task;
    expect([task.status, typeof task.currentJobId]).toEqual(['running', 'number']);
    expect((await run('tasks', 'send', String(task.id), 'second thing')).out).toMatch(/prompt queued; running .* 1 waiting/);
    expect((await run('tasks', 'send', String(task.id), 'third thing')).out).toMatch(/2 waiting/);
    const shown = await run('tasks', 'show', String(task.id));
    expect(shown.out).toContain(`task ${task.id} (gpu-job): running — fix flaky`);
    expect(shown.out).toContain('keys:       github.com/acme/api/issues/5');
    expect(shown.out).toContain('pending:    2 prompt(s), 0 event(s)');
    // Stop interrupts the turn; the next turn takes the queue in order.
    const stopped = await run('tasks', 'stop', String(task.id));
    expect([stopped.code, stopped.out]).toEqual([0, `task ${task.id}: stopping its turn (job ${task.currentJobId} is being cancelled)\n`]);
    let next = 0;
    for (let i = 0; i < 100 && !next; i++) {
      const d = await t.store.getTask(task.id);
      if (d?.currentJobId && d.currentJobId !== task.currentJobId) next = d.currentJobId;
      else await new Promise((r) => setTimeout(r, 100));
    }
    const prompt = String((await t.store.getJob(next))?.input.taskPrompt);
    expect(prompt).toContain('Requests, in order:\n1. second thing\n2. third thing');
    expect((await run('tasks', 'suspend', String(task.id))).out).toBe(`task ${task.id}: suspended (job ${next})\n`);
    expect((await run('tasks', 'resume', String(task.id))).out).toBe(`task ${task.id}: running (job ${next})\n`);
    const list = await run('tasks', '--status', 'running');
    expect(list.out).toMatch(new RegExp(`^${task.id}\\s+gpu-job\\s+running\\s+fix flaky`, 'm'));
    expect((await run('tasks', 'complete', String(task.id))).out).toBe(`task ${task.id}: completed (job ${next})\n`);
    // an event recorded after it completed (a webhook's closing event) is not waiting for a turn: it says so
    await t.store.addTaskEvent(task.id, { receiverId: null, key: null, kind: 'issues.closed', actor: 'octocat', summary: 'octocat closed the issue', occurredAt: Date.now() }, Date.now());
    const closed = await run('tasks', 'show', String(task.id));
    expect(closed.out).toContain('pending:    0 prompt(s), 1 event(s) (the task is completed: they go to its next turn if it is reopened)');
    expect(closed.out).toMatch(/ issues\.closed octocat \[undelivered\]: octocat closed the issue\n/);
    const again = await run('tasks', 'complete', String(task.id));
    expect(again.code).toBe(1);
    expect(again.err).toMatch(/already completed/);
    // Nothing to stop: an error, as suspending a completed task is (it printed the task and exited 0).
    const noTurn = await run('tasks', 'stop', String(task.id));
    expect([noTurn.code, noTurn.err]).toEqual([1, `flotilla: task ${task.id} is completed: no turn is running to stop\n`]);
    const dup = await run('tasks', 'create', 'nope-agent');
    expect([dup.code, /unknown agent "nope-agent"/.test(dup.err)]).toEqual([1, true]);
    expect((await run('tasks', 'show', 'abc')).code).toBe(2);
    expect((await run('tasks', '--help')).out).toContain('suspend');
  });

  it('receivers: create prints URL, secret once and the GitHub settings; list/show never show it; delete', async () => {
    const c = await run('receivers', 'create', 'acme', '--provider', 'github', '--assign-login', 'flotilla-bot', '--assign-agent', 'gpu-job');
    expect(c.code).toBe(0);
    const secret = /secret: (whsec_[0-9a-f]{64})/.exec(c.out)?.[1];
    expect(secret).toBeDefined();
    expect(c.out).toContain(`Payload URL: ${t.url}/hooks/github/acme`);
    expect(c.out).toContain('Content type: application/json');
    expect(c.out).toContain('Policy: issues/PRs assigned to flotilla-bot start a task of agent gpu-job');
    const list = await run('receivers', '--json');
    expect(list.out).not.toContain(secret!);
    const id = (JSON.parse(list.out) as { receivers: { id: number; name: string }[] }).receivers.find((r) => r.name === 'acme')!.id;
    const show = await run('receivers', 'show', String(id));
    expect(show.out).toContain('(shown only when created)');
    expect(show.out).not.toContain(secret!);
    const tea = await run('receivers', 'create', 'tea', '--provider', 'gitea', '--json');
    expect((JSON.parse(tea.out) as { url: string }).url).toBe(`${t.url}/hooks/gitea/tea`);
    const bad = await run('receivers', 'create', 'am', '--provider', 'generic', '--key-expr', 'payload.(');
    expect([bad.code, /keyExpr: CEL expression/.test(bad.err)]).toEqual([1, true]);
    expect((await run('receivers', 'delete', String(id))).out).toBe(`receiver ${id} deleted\n`);
    expect((await run('receivers', 'show', String(id))).code).toBe(1);
  });
});
