/**
 * Issue 7 end to end: a signed GitHub `issues.assigned` starts a task whose first turn runs on
 * a real runner (Python command harness, scripted model); a signed `issue_comment.created`
 * wakes the same task: a job resumes the same session in the same workspace (it reads the
 * file the first turn wrote) and the model request carries the comment text;
 * `issues.closed` completes the task.
 */
import { describe, it, expect } from 'vitest';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { planeWithRunner, waitFor, allEvents } from './helpers.js';
import type { CreatedReceiver, HookResult } from '../src/protocol/index.js';
import { githubExample, postGithub } from '../src/server/hooks/hook-test-util.js';

describe('tasks woken by forge webhooks', () => {
  const { plane, runnerDir } = planeWithRunner();

  it('assigned → task runs; comment → same workspace and session, comment in the model request; closed → completed', async () => {
    const rec: CreatedReceiver = await plane.client.createReceiver({ name: 'acme', provider: 'github', policies: { assign: { login: 'flotilla-bot', agent: 'task-py', coalesceSeconds: 0 } } });
    const url = `${plane.url}${rec.receiver.path}`;
    const assigned = githubExample('issues', 'assigned');
    Object.assign(assigned.issue as object, { html_url: 'https://github.com/acme/api/issues/42', number: 42, title: 'Division by zero', body: 'calc crashes on 1/0' });
    assigned.assignee = { login: 'flotilla-bot' };
    const r1 = (await (await postGithub(url, rec.secret, 'issues', JSON.stringify(assigned))).json()) as HookResult;
    expect(r1.outcome).toBe('created');
    const taskId = r1.taskId!;
    const ended = async (jobId: number) =>
      waitFor(`job ${jobId} to end`, async () => {
        const j = await plane.client.getJob(jobId);
        return ['succeeded', 'failed', 'cancelled', 'lost'].includes(j.status) ? j : null;
      }, 90_000, 200);
    const first = await ended((await plane.client.getTask(taskId)).task.currentJobId!);
    expect(first).toMatchObject({ status: 'succeeded', result: { summary: 'noted' } });
    const idle = await waitFor('task idle with a session', async () => {
      const t = (await plane.client.getTask(taskId)).task;
      return t.status === 'idle' && t.sessionId ? t : null;
    }, 30_000, 100);
    expect([idle.workspaceJobId, idle.sessionId, idle.runnerId]).toEqual([first.id, first.sessionId, first.runnerId]);

    const comment = githubExample('issue_comment', 'created');
    Object.assign(comment.issue as object, { html_url: 'https://github.com/acme/api/issues/42', number: 42 });
    Object.assign(comment.comment as object, { body: 'Please add a regression test for 1/0 ✨', created_at: '2031-01-01T00:00:00Z', updated_at: '2031-01-01T00:00:00Z' });
    const r2 = (await (await postGithub(url, rec.secret, 'issue_comment', JSON.stringify(comment))).json()) as HookResult;
    expect([r2.outcome, r2.taskId]).toEqual(['woke', taskId]);
    const secondId = (await plane.client.getTask(taskId)).task.currentJobId!;
    const second = await ended(secondId);
    expect(second).toMatchObject({ status: 'succeeded', sessionId: first.sessionId, runnerId: first.runnerId, result: { summary: 'read the notes again' } });
    expect((await plane.store.getJob(secondId))?.workspaceJobId).toBe(first.id);
    const events = await allEvents(plane.store, secondId);
    const asked = events.flatMap((e) => (e.type === 'message' && e.data.role === 'user' ? [e.data.text] : []));
    expect(asked[0]).toContain('model request: ');
    expect(asked[0]).toContain('[issue_comment.created] Codertocat: created a comment on issue #42:\nPlease add a regression test for 1/0 ✨');
    // Same workspace: the resumed turn reads the file the first turn wrote.
    const outputs = events.flatMap((e) => (e.type === 'tool.result' ? [e.data.output] : []));
    expect(outputs).toEqual(['turn-one']);

    const closed = githubExample('issues', 'reopened');
    closed.action = 'closed';
    Object.assign(closed.issue as object, { html_url: 'https://github.com/acme/api/issues/42', number: 42, updated_at: '2032-01-01T00:00:00Z' });
    const r3 = (await (await postGithub(url, rec.secret, 'issues', JSON.stringify(closed))).json()) as HookResult;
    expect(r3.outcome).toBe('completed');
    const done = (await plane.client.getTask(taskId)).task;
    expect([done.status, done.keys, done.turns]).toEqual(['completed', [], 2]);
  }, 240_000);

  it('a task whose workspace is gone says so (workspace_lost) instead of starting clean; resume starts it afresh', async () => {
    const created = await plane.client.createTask({ agent: 'task-py', title: 'ws', prompt: 'write the notes' });
    expect(created.coalesceSeconds).toBe(7); // the agent's window (agent.yaml coalesceSeconds)
    const settled = (pred: (t: { status: string; currentJobId: number | null; turns: number }) => boolean, what: string) =>
      waitFor(what, async () => {
        const t = (await plane.client.getTask(created.id)).task;
        return pred(t) ? t : null;
      }, 90_000, 200);
    const first = await settled((t) => t.status === 'idle' && t.turns === 1, 'first turn over');
    expect(first.workspaceJobId).toBe(created.currentJobId);
    rmSync(join(runnerDir, 'workspaces', `job-${created.currentJobId!}`), { recursive: true, force: true });
    await plane.client.sendTaskPrompt(created.id, 'read the notes');
    const lost = await settled((t) => t.status === 'workspace_lost', 'workspace_lost');
    expect((await plane.client.getTask(created.id)).task.error).toMatch(/^workspace or session gone: resume failed/);
    expect(lost.currentJobId).toBeNull();
    // Resume: a fresh workspace and session; the next prompt runs there.
    const resumed = await plane.client.resumeTask(created.id);
    expect([resumed.status, resumed.workspaceJobId, resumed.sessionId]).toEqual(['idle', null, null]);
    await plane.client.sendTaskPrompt(created.id, 'start again');
    const again = await settled((t) => t.status === 'idle' && t.turns === 3, 'third turn over');
    const job3 = await plane.client.getJob(again.workspaceJobId!);
    expect(job3).toMatchObject({ status: 'succeeded', result: { summary: 'noted' } });
  }, 240_000);

  // Last in the file: it revokes the file's runner.
  it('a task whose session is kept on a revoked runner: a wake says workspace_lost, and no turn job waits queued for ever', async () => {
    // the earlier tasks' idle slots on the one runner are released first (an idle task keeps its slot)
    for (const t of await plane.client.listTasks({ status: 'idle' })) await plane.client.completeTask(t.id);
    const created = await plane.client.createTask({ agent: 'task-py', title: 'revoked', prompt: 'write the notes' });
    const idle = await waitFor('first turn over', async () => {
      const t = (await plane.client.getTask(created.id)).task;
      return t.status === 'idle' && t.turns === 1 && t.sessionId ? t : null;
    }, 90_000, 200);
    const runner = await plane.client.revokeRunner(idle.runnerId!);
    const jobsBefore = (await plane.client.listJobs({ agent: 'task-py', limit: 200 })).jobs.length;
    await plane.client.sendTaskPrompt(created.id, 'read the notes');
    const lost = await waitFor('workspace_lost', async () => {
      const t = (await plane.client.getTask(created.id)).task;
      return t.status === 'workspace_lost' ? t : null;
    }, 30_000, 200);
    expect(lost.currentJobId).toBeNull();
    expect(lost.error).toBe(`workspace or session gone: runner ${runner.name} (${runner.id}), which kept this task's session, was revoked; resume the task to start over in a fresh workspace (flotilla tasks resume ${created.id})`);
    expect((await plane.client.listJobs({ agent: 'task-py', limit: 200 })).jobs.length).toBe(jobsBefore);
    // resume: a fresh workspace; the prompt is still pending for the next turn
    const resumed = await plane.client.resumeTask(created.id);
    expect([resumed.workspaceJobId, resumed.sessionId, resumed.runnerId]).toEqual([null, null, null]);
  }, 240_000);
});
