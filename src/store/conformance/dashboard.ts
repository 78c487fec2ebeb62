import { expect, it } from 'vitest';
import type { EventBody } from '../../protocol/index.js';
import { T, newJob, newRunner, type Harness } from './harness.js';

/** Issue 8, migration 0016: runner history, task turns and their inputs, event pages from the end, account settings. */
export function dashboardTests(h: Harness): void {
  it('runner events: newest first with an id cursor, per runner; a bad kind or empty text names the field and stores nothing', async () => {
    const s = await h.open();
    const a = await newRunner(s, {}, 'a');
    const b = await newRunner(s, {}, 'b');
    const job = await newJob(s);
    const e1 = await s.recordRunnerEvent(a.id, { kind: 'connected', text: 'connected (0.1.0)' }, T);
    const e2 = await s.recordRunnerEvent(a.id, { kind: 'held', text: 'held for 1h: disk', jobId: null }, T + 1);
    await s.recordRunnerEvent(b.id, { kind: 'connected', text: 'connected' }, T + 2);
    const e3 = await s.recordRunnerEvent(a.id, { kind: 'offline', text: 'no heartbeat', jobId: job.id }, T + 3);
    expect(e3).toEqual({ id: e3.id, runnerId: a.id, kind: 'offline', text: 'no heartbeat', jobId: job.id, at: T + 3 });
    const other = await h.another(s);
    expect((await other.listRunnerEvents(a.id, 10)).map((e) => [e.kind, e.at])).toEqual([['offline', T + 3], ['held', T + 1], ['connected', T]]);
    expect((await other.listRunnerEvents(a.id, 2)).map((e) => e.id)).toEqual([e3.id, e2.id]);
    expect((await other.listRunnerEvents(a.id, 10, e2.id)).map((e) => e.id)).toEqual([e1.id]);
    // @ts-expect-error -- a kind the store does not know
    await expect(s.recordRunnerEvent(a.id, { kind: 'exploded', text: 'x' }, T)).rejects.toThrow(/kind must be one of connected/);
    await expect(s.recordRunnerEvent(a.id, { kind: 'held', text: '  ' }, T)).rejects.toThrow(/text must be a non-empty string/);
    await expect(s.listRunnerEvents(a.id, 501)).rejects.toThrow(/limit must be at most 500/);
    expect(await s.listRunnerEvents(a.id, 10)).toHaveLength(3);
  });

  it('task turns: attaching a turn job records it; inputs of a range of turns and the pending ones, in id order', async () => {
    const s = await h.open();
    const t = await s.createTask({ agent: 'fixer', title: '', input: {}, keys: [], coalesceMs: 0, now: T });
    await s.enqueueTaskPrompt(t.id, 'first prompt', T);
    const ev1 = await s.addTaskEvent(t.id, { receiverId: null, key: null, kind: 'alert', actor: 'pager', summary: 'disk full', occurredAt: T }, T);
    const c1 = await s.claimTaskTurn(t.id, T + 1);
    const j1 = await newJob(s, { input: { taskId: t.id, taskTurn: 1 } });
    expect(await s.attachTurnJob(t.id, c1!.turn, j1.id, T + 1)).toBe(true);
    // A stale attach (turn 2 is not current) records nothing.
    expect(await s.attachTurnJob(t.id, 2, j1.id, T + 1)).toBe(false);
    await s.updateTask(t.id, null, { status: 'idle', currentJobId: null }, T + 2);
    await s.enqueueTaskPrompt(t.id, 'second prompt', T + 3);
    await s.claimTaskTurn(t.id, T + 4);
    const j2 = await newJob(s, { input: { taskId: t.id, taskTurn: 2 } });
    await s.attachTurnJob(t.id, 2, j2.id, T + 4);
    await s.enqueueTaskPrompt(t.id, 'waiting prompt', T + 5);

    expect(await s.listTaskTurns(t.id, 10)).toEqual([
      { taskId: t.id, turn: 2, jobId: j2.id, createdAt: T + 4 },
      { taskId: t.id, turn: 1, jobId: j1.id, createdAt: T + 1 },
    ]);
    expect((await s.listTaskTurns(t.id, 10, 2)).map((r) => r.turn)).toEqual([1]);
    const all = await s.listTaskInputs(t.id, { fromTurn: 1, toTurn: null, pending: true });
    expect(all.prompts.map((p) => [p.text, p.turn])).toEqual([['first prompt', 1], ['second prompt', 2], ['waiting prompt', null]]);
    expect(all.events.map((e) => [e.id, e.turn])).toEqual([[ev1.id, 1]]);
    const second = await s.listTaskInputs(t.id, { fromTurn: 2, toTurn: 2, pending: false });
    expect(second.prompts.map((p) => p.text)).toEqual(['second prompt']);
    expect(second.events).toEqual([]);
  });

  it('event pages: the tail first, then older pages by seq; messages of several jobs by job then seq', async () => {
    const s = await h.open();
    const a = await newJob(s);
    const b = await newJob(s);
    const msg = (text: string): EventBody => ({ type: 'message', data: { role: 'assistant', text } }) as EventBody;
    const log = (line: string): EventBody => ({ type: 'log', data: { stream: 'stdout', line } }) as EventBody;
    for (let i = 1; i <= 10; i++) await s.appendServerEvent(a.id, i % 3 === 0 ? msg(`a${i}`) : log(`l${i}`), T);
    await s.appendServerEvent(b.id, msg('b1'), T);
    expect((await s.listEventsBefore(a.id, null, 3)).map((e) => e.seq)).toEqual([8, 9, 10]);
    expect((await s.listEventsBefore(a.id, 8, 3)).map((e) => e.seq)).toEqual([5, 6, 7]);
    expect((await s.listEventsBefore(a.id, 3, 10)).map((e) => e.seq)).toEqual([1, 2]);
    expect(await s.listEventsBefore(a.id, 1, 10)).toEqual([]);
    const msgs = await s.listJobMessages([b.id, a.id], 100);
    expect(msgs.map((e) => [e.jobId, e.seq, e.type === 'message' ? e.data.text : ''])).toEqual([[a.id, 3, 'a3'], [a.id, 6, 'a6'], [a.id, 9, 'a9'], [b.id, 1, 'b1']]);
    expect(await s.listJobMessages([], 10)).toEqual([]);
    await expect(s.listEventsBefore(a.id, null, 5001)).rejects.toThrow(/limit must be at most 5000/);
  });

  it('settings: unset is null; set, replace, clear; seen by another instance', async () => {
    const s = await h.open();
    expect(await s.getSetting('effort.defaultTier')).toBeNull();
    await s.setSetting('effort.defaultTier', 'cheap', T);
    await s.setSetting('effort.defaultTier', 'max', T + 1);
    const other = await h.another(s);
    expect(await other.getSetting('effort.defaultTier')).toBe('max');
    await other.setSetting('effort.defaultTier', null, T + 2);
    expect(await s.getSetting('effort.defaultTier')).toBeNull();
    await expect(s.setSetting('', 1, T)).rejects.toThrow(/setting key must be/);
  });
}
