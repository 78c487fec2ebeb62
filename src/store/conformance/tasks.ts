import { expect, it } from 'vitest';
import type { NewTaskEvent, Store } from '../types.js';
import { T, newJob, type Harness } from './harness.js';

const KEY = 'https://github.com/acme/api/issues/42';

function ev(over: Partial<NewTaskEvent> = {}): NewTaskEvent {
  return { receiverId: null, key: KEY, kind: 'issue_comment.created', actor: 'octocat', summary: 'octocat commented: hi', occurredAt: T, ...over };
}

async function receiver(s: Store, name = 'gh', fallbackTaskId: number | null = null) {
  return s.createReceiver({
    name,
    provider: 'github',
    auth: 'hmac',
    keyExpr: null,
    summaryExpr: null,
    fallbackTaskId,
    policies: { completeOnClose: true, wakeOnReopen: true },
    secret: 'sekrit',
    tokenHash: null,
    now: T,
  });
}

/** Issue 7: tasks, keys, prompts, turns, coalescing, receivers and deliveries. */
export function taskTests(h: Harness): void {
  it('tasks: create with keys, one active owner per key, complete releases, reopen takes back', async () => {
    const s = await h.open();
    const t = await s.createTask({ agent: 'fixer', title: 'issue 42', input: { repo: 'r' }, keys: [KEY, KEY], coalesceMs: 180_000, now: T });
    expect(t).toEqual({
      id: t.id, agent: 'fixer', title: 'issue 42', input: { repo: 'r' }, status: 'idle', keys: [KEY], coalesceMs: 180_000,
      currentJobId: null, workspaceJobId: null, runnerId: null, sessionId: null, turn: 0, windowUntil: null, trailingDueAt: null,
      lastEventAt: null, slotUntil: null, error: null, queuedPrompts: 0, pendingEvents: 0,
      budgetMicros: null, spentMicros: 0, reservedMicros: 0, turnJobStatus: null, turnPausedJobs: 0, createdAt: T, updatedAt: T,
    });
    expect(await s.getTask(t.id)).toEqual(t);
    await expect(s.createTask({ agent: 'fixer', title: '', input: {}, keys: [KEY], coalesceMs: 0, now: T })).rejects.toThrow(`is owned by task ${t.id}`);
    await expect(s.createTask({ agent: 'fixer', title: '', input: {}, keys: [], coalesceMs: 86_400_001, now: T })).rejects.toThrow(/coalesceMs/);
    expect((await s.findTaskByKey(KEY))?.id).toBe(t.id);
    expect(await s.findTaskByKey('nope')).toBeNull();
    const done = await s.completeTask(t.id, T + 1);
    expect([done?.status, done?.keys]).toEqual(['completed', []]);
    expect(await s.completeTask(t.id, T + 2)).toBeNull();
    expect(await s.findTaskByKey(KEY)).toBeNull();
    expect((await s.findTaskByKey(KEY, true))?.id).toBe(t.id);
    const t2 = await s.createTask({ agent: 'fixer', title: 'again', input: {}, keys: [KEY], coalesceMs: 0, now: T + 3 });
    await expect(s.reopenTask(t.id, T + 4)).rejects.toThrow(`is owned by task ${t2.id}`);
    expect((await s.getTask(t.id))?.status).toBe('completed'); // the failed reopen changed nothing
    await s.completeTask(t2.id, T + 5);
    const back = await s.reopenTask(t.id, T + 6);
    expect([back?.status, back?.keys]).toEqual(['idle', [KEY]]);
    expect((await s.listTasks({ limit: 10 })).map((x) => x.id)).toEqual([t2.id, t.id]);
    expect((await s.listTasks({ limit: 10, status: 'completed' })).map((x) => x.id)).toEqual([t2.id]);
    expect((await s.listTasks({ limit: 10, before: t2.id })).map((x) => x.id)).toEqual([t.id]);
  });

  it('task budgets (0026): stored, summed over the turns\' trees, raised atomically within a cap; a turn job finds its task', async () => {
    const s = await h.open();
    const t = await s.createTask({ agent: 'fixer', title: '', input: {}, keys: [], coalesceMs: 0, budgetMicros: 300_000, now: T });
    expect([t.budgetMicros, t.spentMicros, t.reservedMicros, t.turnJobStatus]).toEqual([300_000, 0, 0, null]);
    await expect(s.createTask({ agent: 'fixer', title: '', input: {}, keys: [], coalesceMs: 0, budgetMicros: 0, now: T })).rejects.toThrow(/budgetMicros/);
    // two turns, each a tree: spent and reserved summed over both
    const turnJob = async (micros: number) => {
      await s.enqueueTaskPrompt(t.id, 'go', T);
      const claim = await s.claimTaskTurn(t.id, T);
      const job = await newJob(s, { budgetMicros: micros });
      expect(await s.attachTurnJob(t.id, claim!.turn, job.id, T)).toBe(true);
      return job;
    };
    const j1 = await turnJob(100_000);
    const r1 = await s.reserveBudget(j1.id, 40_000, T);
    await s.settleBudget(j1.id, r1!.ok ? r1!.reservationId : 0, 25_000, T);
    await s.updateTask(t.id, null, { status: 'idle', currentJobId: null }, T);
    const j2 = await turnJob(200_000);
    expect(await s.reserveBudget(j2.id, 7_000, T)).toMatchObject({ ok: true });
    expect(await s.getTask(t.id)).toMatchObject({ currentJobId: j2.id, spentMicros: 25_000, reservedMicros: 7_000, turnJobStatus: 'queued' });
    expect((await s.listTasks({ limit: 10 })).find((x) => x.id === t.id)).toMatchObject({ spentMicros: 25_000, reservedMicros: 7_000 });
    expect([await s.taskOfTurnJob(j1.id), await s.taskOfTurnJob(j2.id), await s.taskOfTurnJob(999_999)]).toEqual([t.id, t.id, null]);
    // add: atomic (two at once both count), never past the cap, nothing changed when refused
    await Promise.all([s.addTaskBudget(t.id, 50_000, 1_000_000, T + 1), s.addTaskBudget(t.id, 60_000, 1_000_000, T + 1)]);
    expect((await s.getTask(t.id))?.budgetMicros).toBe(410_000);
    expect(await s.addTaskBudget(t.id, 590_001, 1_000_000, T)).toEqual({ capped: 410_000 });
    expect(await s.addTaskBudget(t.id, 590_000, 1_000_000, T)).toMatchObject({ budgetMicros: 1_000_000 });
    const none = await s.createTask({ agent: 'fixer', title: '', input: {}, keys: [], coalesceMs: 0, now: T });
    expect(await s.addTaskBudget(none.id, 1, 1_000_000, T)).toBe('no_budget');
    expect(await s.addTaskBudget(999_999, 1, 1_000_000, T)).toBeNull();
    await expect(s.addTaskBudget(t.id, 0, 1_000_000, T)).rejects.toThrow(/addMicros/);
    // set and clear
    expect((await s.updateTask(none.id, null, { budgetMicros: 5 }, T))?.budgetMicros).toBe(5);
    expect((await s.updateTask(none.id, null, { budgetMicros: null }, T))?.budgetMicros).toBeNull();
  });

  it('turns: a claim takes pending events and prompts in order, once; abandon puts them back', async () => {
    const s = await h.open();
    const t = await s.createTask({ agent: 'fixer', title: '', input: {}, keys: [KEY], coalesceMs: 0, now: T });
    expect(await s.claimTaskTurn(t.id, T)).toBeNull(); // nothing to do
    const p1 = await s.enqueueTaskPrompt(t.id, 'first', T + 1);
    const e1 = await s.addTaskEvent(t.id, ev({ summary: 'é \u001b x' }), T + 2);
    await s.enqueueTaskPrompt(t.id, 'second', T + 3);
    expect(e1.summary).toBe('é \u001b x');
    expect((await s.getTask(t.id))?.queuedPrompts).toBe(2);
    const claim = await s.claimTaskTurn(t.id, T + 10);
    expect(claim?.turn).toBe(1);
    expect(claim?.prompts.map((p) => [p.text, p.turn])).toEqual([['first', 1], ['second', 1]]);
    expect(claim?.events.map((e) => [e.id, e.turn])).toEqual([[e1.id, 1]]);
    expect([claim?.task.status, claim?.task.queuedPrompts, claim?.task.pendingEvents]).toEqual(['running', 0, 0]);
    expect(p1.turn).toBeNull();
    await s.enqueueTaskPrompt(t.id, 'third', T + 11);
    expect(await s.claimTaskTurn(t.id, T + 12)).toBeNull(); // running: one turn at a time
    const job = await newJob(s, { agent: 'fixer' });
    expect(await s.attachTurnJob(t.id, 2, job.id, T + 12)).toBe(false);
    expect(await s.attachTurnJob(t.id, 1, job.id, T + 12)).toBe(true);
    expect(await s.listTaskTurnJobs()).toEqual([{ taskId: t.id, jobId: job.id, jobStatus: 'queued' }]);
    const ended = await s.updateTask(t.id, ['running'], { status: 'idle', currentJobId: null, sessionId: 'sess-1', runnerId: null, workspaceJobId: job.id }, T + 20);
    expect([ended?.status, ended?.currentJobId, ended?.workspaceJobId, ended?.sessionId]).toEqual(['idle', null, job.id, 'sess-1']);
    expect(await s.updateTask(t.id, ['running'], { status: 'idle' }, T + 21)).toBeNull();
    const c2 = await s.claimTaskTurn(t.id, T + 30);
    expect(c2?.prompts.map((p) => p.text)).toEqual(['third']);
    await s.abandonTaskTurn(t.id, 2, T + 31);
    const after = await s.getTask(t.id);
    expect([after?.status, after?.turn, after?.queuedPrompts]).toEqual(['idle', 1, 1]);
    // Two claimers at once (another server on PostgreSQL): one turn.
    const s2 = await h.another(s);
    const both = await Promise.all([s.claimTaskTurn(t.id, T + 40), s2.claimTaskTurn(t.id, T + 40)]);
    expect(both.filter((x) => x !== null).length).toBe(1);
    expect(await s.listTaskEvents(t.id, 10)).toEqual([{ ...e1, turn: 1 }]);
  });

  it('coalescing: first event wakes, the rest set one trailing wake at the window end, claimed once', async () => {
    const s = await h.open();
    const t = await s.createTask({ agent: 'fixer', title: '', input: {}, keys: [], coalesceMs: 1000, now: T });
    expect(await s.noteTaskEvent(t.id, T)).toEqual({ decision: 'wake' });
    expect(await s.noteTaskEvent(t.id, T + 100)).toEqual({ decision: 'coalesced', trailingDueAt: T + 1000 });
    expect(await s.noteTaskEvent(t.id, T + 900)).toEqual({ decision: 'coalesced', trailingDueAt: T + 1000 });
    expect(await s.noteTaskEvent(999_999, T)).toBeNull();
    expect(await s.listTrailingWakes()).toEqual([{ taskId: t.id, dueAt: T + 1000 }]);
    expect(await s.claimTrailingWake(t.id, T + 1000, T + 999)).toBe(false); // not due yet
    const s2 = await h.another(s);
    const claims = await Promise.all([s.claimTrailingWake(t.id, T + 1000, T + 1000), s2.claimTrailingWake(t.id, T + 1000, T + 1000)]);
    expect(claims.filter(Boolean).length).toBe(1);
    expect(await s.listTrailingWakes()).toEqual([]);
    // The trailing wake opened a new window: an event right after it is coalesced again.
    expect(await s.noteTaskEvent(t.id, T + 1500)).toEqual({ decision: 'coalesced', trailingDueAt: T + 2000 });
    expect(await s.noteTaskEvent(t.id, T + 5000)).toEqual({ decision: 'wake' });
  });

  it('receivers: created, secret only through credentials, name unique, deleted', async () => {
    const s = await h.open();
    const r = await receiver(s);
    expect(r).toEqual({ id: r.id, name: 'gh', provider: 'github', auth: 'hmac', keyExpr: null, summaryExpr: null, fallbackTaskId: null, policies: { completeOnClose: true, wakeOnReopen: true }, createdAt: T });
    expect(JSON.stringify(await s.listReceivers())).not.toContain('sekrit');
    expect(await s.findReceiverCredentials('gh')).toEqual({ receiver: r, secret: 'sekrit', tokenHash: null });
    await expect(receiver(s)).rejects.toThrow(/taken/);
    await expect(receiver(s, 'Bad Name')).rejects.toThrow(/receiver name/);
    expect(await s.getReceiver(r.id)).toEqual(r);
    expect(await s.deleteReceiver(r.id)).toBe(true);
    expect(await s.deleteReceiver(r.id)).toBe(false);
    expect(await s.findReceiverCredentials('gh')).toBeNull();
  });

  it('deliveries: once per id (also from two servers at once), policy task, owner, fallback, unmatched, stale', async () => {
    const s = await h.open();
    const fallback = await s.createTask({ agent: 'triage', title: 'fallback', input: {}, keys: [], coalesceMs: 0, now: T });
    const r = await receiver(s, 'gh', fallback.id);
    const create = { agent: 'fixer', title: 'issue 42', input: {}, keys: [], coalesceMs: 180_000 };
    const first = await s.ingestDelivery({ receiverId: r.id, deliveryId: 'd1', event: ev({ kind: 'issues.assigned' }), createTask: create, fallbackTaskId: null, now: T });
    if (first.duplicate) throw new Error('first delivery seen as duplicate');
    expect([first.created, first.task?.agent, first.task?.keys, first.task?.pendingEvents, first.stale]).toEqual([true, 'fixer', [KEY], 1, false]);
    const s2 = await h.another(s);
    const again = await Promise.all([
      s.ingestDelivery({ receiverId: r.id, deliveryId: 'd2', event: ev({ occurredAt: T + 10 }), fallbackTaskId: null, now: T + 1 }),
      s2.ingestDelivery({ receiverId: r.id, deliveryId: 'd2', event: ev({ occurredAt: T + 10 }), fallbackTaskId: null, now: T + 1 }),
    ]);
    expect(again.filter((x) => x.duplicate).length).toBe(1);
    const owner = first.task!.id;
    expect((await s.getTask(owner))?.pendingEvents).toBe(2);
    expect((await s.getTask(owner))?.lastEventAt).toBe(T + 10);
    const stale = await s.ingestDelivery({ receiverId: r.id, deliveryId: 'd3', event: ev({ kind: 'issues.closed', occurredAt: T + 5 }), fallbackTaskId: null, now: T + 2 });
    expect(stale.duplicate === false && [stale.task?.id, stale.stale]).toEqual([owner, true]);
    expect((await s.getTask(owner))?.lastEventAt).toBe(T + 10); // never backwards
    const fb = await s.ingestDelivery({ receiverId: r.id, deliveryId: 'd4', event: ev({ key: 'other' }), fallbackTaskId: fallback.id, now: T + 3 });
    expect(fb.duplicate === false && [fb.task?.id, fb.created]).toEqual([fallback.id, false]);
    const lost = await s.ingestDelivery({ receiverId: r.id, deliveryId: 'd5', event: ev({ key: 'other' }), fallbackTaskId: null, now: T + 4 });
    expect(lost.duplicate === false && lost.task).toBeNull();
    expect((await s.listTaskEvents(null, 10)).map((e) => e.key)).toEqual(['other']);
    // Same delivery id on another receiver is another delivery.
    const r2 = await receiver(s, 'gh2');
    const other = await s.ingestDelivery({ receiverId: r2.id, deliveryId: 'd1', event: ev(), fallbackTaskId: null, now: T + 5 });
    expect(other.duplicate).toBe(false);
    await expect(s.ingestDelivery({ receiverId: r.id, deliveryId: '', event: ev(), fallbackTaskId: null, now: T })).rejects.toThrow(/deliveryId/);
  });
}
