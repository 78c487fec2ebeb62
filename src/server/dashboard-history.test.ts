// Issue 8 through the real server: the account default effort tier (API, and the tier a
// job is assigned), a runner's activity (holds, resumes, capacity, connects, jobs started and
// ended), a task's conversation (what woke each turn, its job, that job's messages, what is
// queued) and a job's events read from the end.
import { mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EventBody, EffortTierList, Job, JobEventPage, RunnerActivity, TaskConversation } from '../protocol/index.js';
import { createApiToken } from './auth.js';
import { FakeRunner, startTestServer, type TestServer } from './test-helpers.js';

let agentsDir = '';
let t: TestServer;
const runners: FakeRunner[] = [];
beforeAll(async () => {
  agentsDir = await mkdtemp(join(tmpdir(), 'flotilla-history-agents-'));
  await mkdir(join(agentsDir, 'plain-job'), { recursive: true });
  await writeFile(join(agentsDir, 'plain-job', 'agent.yaml'), 'name: plain-job\nharness: command\ncommand: [echo, hi]\n');
  await writeFile(join(agentsDir, 'plain-job', 'prompt.md'), 'hi');
  t = await startTestServer({ dispatchIntervalMs: 100, agentsDirs: [agentsDir] });
});
afterAll(async () => {
  for (const r of runners) r.close();
  await t?.close();
  await rm(agentsDir, { recursive: true, force: true });
});

describe('default effort tier', () => {
  it('admins set it through the API, members cannot; jobs without a tier get it; an unknown or deleted default is refused', async () => {
    const member = await createApiToken(t.store, 'reader', 'member', Date.now());
    expect(((await (await t.api('/api/effort-tiers')).json()) as EffortTierList)).toMatchObject({ defaultTier: null, defaultSource: null });
    expect((await t.api('/api/effort-default', { method: 'PUT', token: member, json: { tier: 'high' } })).status).toBe(403);
    const unknown = await t.api('/api/effort-default', { method: 'PUT', json: { tier: 'cheap' } });
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toMatchObject({ error: { code: 'unknown_tier', field: 'tier' } });
    expect((await t.api('/api/effort-default', { method: 'PUT', json: { tier: 7 } })).status).toBe(400);

    await t.api('/api/effort-tiers/cheap', { method: 'PUT', json: { model: 'claude-haiku-4-5', level: 'low' } });
    const set = await t.api('/api/effort-default', { method: 'PUT', json: { tier: 'cheap' } });
    expect(set.status).toBe(200);
    expect(await set.json()).toMatchObject({ defaultTier: 'cheap', defaultSource: 'account' });
    expect(await t.store.getSetting('effort.defaultTier')).toBe('cheap');

    // A job that names no tier runs at the account default.
    const r = await FakeRunner.start(t, { name: 'tiers-r', capacity: 1 });
    runners.push(r);
    await r.hello({ name: 'tiers-r', capacity: 1 });
    const job = (await (await t.api('/api/jobs', { json: { agent: 'plain-job', input: {} } })).json()) as Job;
    expect((await r.next('job.assign')).assignment).toMatchObject({ jobId: job.id, effort: { tier: 'cheap', model: 'claude-haiku-4-5', level: 'low' } });
    await t.store.transitionJob(job.id, null, ['assigned', 'running'], 'cancelled', Date.now());
    r.close();

    // The default cannot be deleted from under it; cleared, the tier can go.
    const inUse = await t.api('/api/effort-tiers/cheap', { method: 'DELETE' });
    expect(inUse.status).toBe(409);
    expect(await inUse.json()).toMatchObject({ error: { code: 'tier_in_use' } });
    const cleared = await t.api('/api/effort-default', { method: 'PUT', json: { tier: null } });
    expect(await cleared.json()).toMatchObject({ defaultTier: null, defaultSource: null });
    expect(await t.store.getSetting('effort.defaultTier')).toBeNull();
    expect((await t.api('/api/effort-tiers/cheap', { method: 'DELETE' })).status).toBe(204);
  });
});

describe('runner activity', () => {
  it('lists holds, resumes, capacity changes, connects and jobs started/ended, newest first', async () => {
    const r = await FakeRunner.start(t, { name: 'act-r', capacity: 2 });
    runners.push(r);
    await r.hello({ name: 'act-r', capacity: 2 });
    const id = r.runnerId;
    expect((await t.api(`/api/runners/${id}/hold`, { json: { for: '1h', reason: 'disk swap' } })).status).toBe(200);
    expect((await t.api(`/api/runners/${id}/resume`, { method: 'POST' })).status).toBe(200);
    expect((await t.api(`/api/runners/${id}/resume`, { method: 'POST' })).status).toBe(200); // not held: no new line
    expect((await t.api(`/api/runners/${id}`, { method: 'PATCH', json: { capacity: 1 } })).status).toBe(200);
    const job = (await (await t.api('/api/jobs', { json: { agent: 'plain-job', input: {} } })).json()) as Job;
    expect((await r.next('job.assign')).assignment.jobId).toBe(job.id);
    await t.store.transitionJob(job.id, null, ['assigned', 'running'], 'failed', Date.now() + 1, { endReason: 'error', error: 'tests broke' });

    const res = await t.api(`/api/runners/${id}/activity`);
    expect(res.status).toBe(200);
    const { entries } = (await res.json()) as RunnerActivity;
    expect(entries.map((e) => e.kind)).toEqual(['job.ended', 'job.started', 'capacity', 'resumed', 'held', 'connected', 'registered']);
    expect(entries[0]).toMatchObject({ jobId: job.id, text: `job #${job.id} plain-job ended failed: error — tests broke` });
    expect(entries[4]!.text).toMatch(/^held by admin for 1h, until \d{4}-.*: disk swap$/);
    expect(entries[2]!.text).toBe('capacity set by admin: 1 parallel job, 1 browser slot');
    const times = entries.map((e) => Date.parse(e.at));
    expect([...times].sort((a, b) => b - a)).toEqual(times);
    expect(((await (await t.api(`/api/runners/${id}/activity?limit=2`)).json()) as RunnerActivity).entries.map((e) => e.kind)).toEqual(['job.ended', 'job.started']);
    expect((await t.api(`/api/runners/${id}/activity?limit=0`)).status).toBe(400);
    expect((await t.api('/api/runners/99999/activity')).status).toBe(404);

    r.close();
    await expect.poll(async () => (await t.store.listRunnerEvents(id, 1))[0]?.kind, { timeout: 5_000 }).toBe('disconnected');
  });
});

describe('runner activity of attempts that moved on', () => {
  it('a job refused on one runner and run on another shows on both: on the first as requeued there, with where the job is now', async () => {
    const a = await FakeRunner.start(t, { name: 'moved-a', capacity: 1 });
    runners.push(a);
    await a.hello({ name: 'moved-a', capacity: 1 });
    const job = (await (await t.api('/api/jobs', { json: { agent: 'plain-job', input: {} } })).json()) as Job;
    expect((await a.next('job.assign')).assignment).toMatchObject({ jobId: job.id, attempt: 1 });
    const b = await FakeRunner.start(t, { name: 'moved-b', capacity: 1 });
    runners.push(b);
    await b.hello({ name: 'moved-b', capacity: 1 });
    a.send({ type: 'job.rejected', jobId: job.id, attempt: 1, reason: 'disk full' });
    expect((await b.next('job.assign')).assignment).toMatchObject({ jobId: job.id, attempt: 2 });
    await t.store.transitionJob(job.id, 2, ['assigned', 'running'], 'failed', Date.now() + 1, { endReason: 'error', error: 'tests broke' });

    const onA = ((await (await t.api(`/api/runners/${a.runnerId}/activity`)).json()) as RunnerActivity).entries.filter((e) => e.jobId === job.id);
    expect(onA.map((e) => [e.kind, e.text])).toEqual([
      ['job.ended', `job #${job.id} plain-job ended requeued on this runner; the job is now failed, at attempt 2`],
      ['job.started', `job #${job.id} plain-job started`],
    ]);
    const onB = ((await (await t.api(`/api/runners/${b.runnerId}/activity`)).json()) as RunnerActivity).entries.filter((e) => e.jobId === job.id);
    expect(onB.map((e) => [e.kind, e.text])).toEqual([
      ['job.ended', `job #${job.id} plain-job (attempt 2) ended failed: error — tests broke`],
      ['job.started', `job #${job.id} plain-job started (attempt 2)`],
    ]);
    a.close();
    b.close();
  });
});

describe('task conversation and event pages', () => {
  it('each turn: what woke it, its job and that job’s messages in order; what is queued; older turns by cursor', async () => {
    const store = t.store;
    const now = Date.now();
    const task = await store.createTask({ agent: 'plain-job', title: 'chat', input: {}, keys: [], coalesceMs: 0, now });
    const msg = (role: 'assistant' | 'user', text: string) => ({ type: 'message', data: { role, text } }) as EventBody;
    // Two turns run by hand as the engine runs them: claim, job, attach, messages, end.
    const turnJobs: number[] = [];
    for (const [n, prompt] of [[1, 'Fix the flaky test.'], [2, 'Also update the changelog.']] as const) {
      await store.enqueueTaskPrompt(task.id, prompt, now + n * 10);
      if (n === 2) await store.addTaskEvent(task.id, { receiverId: null, key: null, kind: 'issue_comment.created', actor: 'octocat', summary: 'octocat: any news?', occurredAt: now + 21 }, now + 21);
      const claim = await store.claimTaskTurn(task.id, now + n * 10 + 5);
      expect(claim?.turn).toBe(n);
      const job = await store.createJob({ parentId: null, agent: 'plain-job', agentVersion: '1', input: { taskId: task.id, taskTurn: n }, selector: { pool: 'none' }, priority: 0, budgetMicros: 1, now });
      await store.attachTurnJob(task.id, n, job.id, now + n * 10 + 5);
      await store.appendServerEvent(job.id, { type: 'log', data: { stream: 'stdout', line: 'noise' } } as EventBody, now);
      await store.appendServerEvent(job.id, msg('assistant', `Reply ${n}a`), now);
      await store.appendServerEvent(job.id, msg('assistant', `Reply ${n}b`), now);
      await store.transitionJob(job.id, null, ['queued'], 'cancelled', now);
      await store.updateTask(task.id, ['running'], { status: 'idle', currentJobId: null }, now + n * 10 + 6);
      turnJobs.push(job.id);
    }
    await store.updateTask(task.id, null, { status: 'suspended' }, now + 40);
    expect((await t.api(`/api/tasks/${task.id}/send`, { json: { prompt: 'Then close it.' } })).status).toBe(200);

    const conv = (await (await t.api(`/api/tasks/${task.id}/conversation`)).json()) as TaskConversation;
    expect(conv.task.id).toBe(task.id);
    expect(conv.olderBefore).toBeNull();
    expect(conv.turns.map((x) => ({ turn: x.turn, jobId: x.jobId, status: x.jobStatus, inputs: x.inputs.map((i) => `${i.kind}: ${i.text}`), replies: x.replies.map((m) => m.text) }))).toEqual([
      { turn: 1, jobId: turnJobs[0], status: 'cancelled', inputs: ['prompt: Fix the flaky test.'], replies: ['Reply 1a', 'Reply 1b'] },
      { turn: 2, jobId: turnJobs[1], status: 'cancelled', inputs: ['prompt: Also update the changelog.', 'issue_comment.created: octocat: any news?'], replies: ['Reply 2a', 'Reply 2b'] },
    ]);
    expect(conv.turns[1]!.inputs[1]).toMatchObject({ source: 'event', actor: 'octocat' });
    expect(conv.queued.map((i) => [i.source, i.text])).toEqual([['prompt', 'Then close it.']]);

    const newest = (await (await t.api(`/api/tasks/${task.id}/conversation?limit=1`)).json()) as TaskConversation;
    expect([newest.turns.map((x) => x.turn), newest.olderBefore]).toEqual([[2], 2]);
    const older = (await (await t.api(`/api/tasks/${task.id}/conversation?limit=1&before=2`)).json()) as TaskConversation;
    expect([older.turns.map((x) => x.turn), older.olderBefore, older.queued]).toEqual([[1], null, []]);
    expect((await t.api(`/api/tasks/${task.id}/conversation?limit=51`)).status).toBe(400);
    expect((await t.api('/api/tasks/99999/conversation')).status).toBe(404);
  });

  it('a job’s events from the end: the tail, then older pages, with how many remain', async () => {
    const job = await t.store.createJob({ parentId: null, agent: 'plain-job', agentVersion: '1', input: {}, selector: { pool: 'none' }, priority: 0, budgetMicros: 1, now: Date.now() });
    for (let i = 1; i <= 25; i++) await t.store.appendServerEvent(job.id, { type: 'log', data: { stream: 'stdout', line: `l${i}` } } as EventBody, Date.now());
    const tail = (await (await t.api(`/api/jobs/${job.id}/events/page?limit=10`)).json()) as JobEventPage;
    expect([tail.events.map((e) => e.seq), tail.olderCount]).toEqual([[16, 17, 18, 19, 20, 21, 22, 23, 24, 25], 15]);
    const page = (await (await t.api(`/api/jobs/${job.id}/events/page?limit=10&before=16`)).json()) as JobEventPage;
    expect([page.events[0]!.seq, page.events.at(-1)!.seq, page.olderCount]).toEqual([6, 15, 5]);
    const first = (await (await t.api(`/api/jobs/${job.id}/events/page?limit=10&before=6`)).json()) as JobEventPage;
    expect([first.events.map((e) => e.seq), first.olderCount]).toEqual([[1, 2, 3, 4, 5], 0]);
    expect((await t.api(`/api/jobs/${job.id}/events/page?limit=2001`)).status).toBe(400);
    expect((await t.api(`/api/jobs/${job.id}/events/page?before=x`)).status).toBe(400);
    expect((await t.api('/api/jobs/99999/events/page')).status).toBe(404);
  });
});
