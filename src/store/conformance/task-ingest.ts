import { expect, it } from 'vitest';
import type { IngestResult, NewDelivery, NewTaskEvent, Store } from '../types.js';
import { T, type Harness } from './harness.js';

const KEY = 'https://github.com/acme/api/issues/7';

function ev(occurredAt: number, kind = 'issue_comment.created'): NewTaskEvent {
  return { receiverId: null, key: KEY, kind, actor: 'octocat', summary: 'octocat commented', occurredAt };
}

function live(r: IngestResult) {
  if (r.duplicate) throw new Error('unexpected duplicate');
  return r;
}

/** Issue 7 throughput: ingestDelivery notes the coalescing window in its own transaction (as noteTaskEvent would). */
export function taskIngestTests(h: Harness): void {
  it('deliveries with coalesce: first wakes, the rest coalesce to the window end, stale not noted, suspended not noted', async () => {
    const s: Store = await h.open();
    const r = await s.createReceiver({ name: 'gh', provider: 'github', auth: 'hmac', keyExpr: null, summaryExpr: null, fallbackTaskId: null, policies: { completeOnClose: true, wakeOnReopen: true }, secret: 'x', tokenHash: null, now: T });
    const t = await s.createTask({ agent: 'fixer', title: 't', input: {}, keys: [KEY], coalesceMs: 1000, now: T });
    const d = (id: string, occurredAt: number, now: number, coalesce: 'always' | 'unless_stale' = 'always', kind?: string) =>
      s.ingestDelivery({ receiverId: r.id, deliveryId: id, event: ev(occurredAt, kind), fallbackTaskId: null, coalesce, now });
    const a = live(await d('a', T + 10, T));
    expect([a.window, a.task?.id, a.task?.pendingEvents, a.task?.windowUntil, a.task?.lastEventAt]).toEqual([{ decision: 'wake' }, t.id, 1, T + 1000, T + 10]);
    const b = live(await d('b', T + 20, T + 100));
    expect([b.window, b.task?.trailingDueAt, b.task?.pendingEvents]).toEqual([{ decision: 'coalesced', trailingDueAt: T + 1000 }, T + 1000, 2]);
    const c = live(await d('c', T + 30, T + 900));
    expect(c.window).toEqual({ decision: 'coalesced', trailingDueAt: T + 1000 });
    // Stale (older than T + 30): recorded, last_event_at kept; `unless_stale` does not note it, `always` does.
    const st = live(await d('st', T + 5, T + 950, 'unless_stale', 'issues.labeled'));
    expect([st.stale, st.window, st.task?.lastEventAt]).toEqual([true, null, T + 30]);
    const st2 = live(await d('st2', T + 5, T + 960, 'always'));
    expect([st2.stale, st2.window]).toEqual([true, { decision: 'coalesced', trailingDueAt: T + 1000 }]);
    // Same as the separate noteTaskEvent: stored values agree.
    const got = await s.getTask(t.id);
    expect([got?.windowUntil, got?.trailingDueAt, got?.lastEventAt, got?.pendingEvents]).toEqual([T + 1000, T + 1000, T + 30, 5]);
    // Without `coalesce`: no window field, nothing noted.
    const plain = live(await s.ingestDelivery({ receiverId: r.id, deliveryId: 'p', event: ev(T + 40), fallbackTaskId: null, now: T + 970 }));
    expect('window' in plain).toBe(false);
    // A suspended task records the event but is not noted.
    await s.updateTask(t.id, null, { status: 'suspended' }, T + 980);
    const sus = live(await d('s', T + 50, T + 5000));
    expect([sus.window, sus.task?.status, sus.task?.windowUntil]).toEqual([null, 'suspended', T + 1000]);
    // A repeat is a duplicate, answers the task the first delivery went to, and changes nothing.
    expect(await d('a', T + 60, T + 6000)).toEqual({ duplicate: true, taskId: t.id });
    await expect(s.ingestDelivery({ receiverId: r.id, deliveryId: 'z', event: ev(T), fallbackTaskId: null, coalesce: 'sometimes' as 'always', now: T })).rejects.toThrow(/coalesce/);
    expect((await s.getTask(t.id))?.pendingEvents).toBe(7);
  });

  it('deliveries in one batch: each as alone, in order (same task twice, a repeat inside the batch); one bad → nothing stored', async () => {
    const s: Store = await h.open();
    const r = await s.createReceiver({ name: 'gh', provider: 'github', auth: 'hmac', keyExpr: null, summaryExpr: null, fallbackTaskId: null, policies: { completeOnClose: true, wakeOnReopen: true }, secret: 'x', tokenHash: null, now: T });
    const t = await s.createTask({ agent: 'fixer', title: 't', input: {}, keys: [KEY], coalesceMs: 1000, now: T });
    const d = (id: string, occurredAt: number, key: string | null = KEY) => ({ receiverId: r.id, deliveryId: id, event: { ...ev(occurredAt), key }, fallbackTaskId: null, coalesce: 'always' as const, now: T + 1 });
    const out = await s.ingestDeliveries([d('b1', T + 10), d('b2', T + 20), d('b1', T + 30), d('b3', T + 40, 'nobody')]);
    expect(out.map((x) => (x.duplicate ? 'dup' : [x.task?.id ?? null, x.window, x.task?.pendingEvents ?? null]))).toEqual([
      [t.id, { decision: 'wake' }, 1],
      [t.id, { decision: 'coalesced', trailingDueAt: T + 1001 }, 2],
      'dup',
      [null, null, null],
    ]);
    expect(await s.ingestDeliveries([])).toEqual([]);
    // A malformed one: the error names it and nothing of the batch is stored.
    await expect(s.ingestDeliveries([d('c1', T + 50), { ...d('c2', T + 60), deliveryId: '' }])).rejects.toThrow(/deliveryId/);
    const got = await s.getTask(t.id);
    expect([got?.pendingEvents, got?.lastEventAt]).toEqual([2, T + 20]);
    const again = await s.ingestDelivery(d('c1', T + 50));
    expect(again.duplicate).toBe(false); // c1 was not stored by the failed batch
  });

  it('deliveries mixed in one batch: repeats (stored, in the batch, of an unmatched one) answer the first one\'s task; owner, fallback, unmatched, reopen, stale and create, in order', async () => {
    const s: Store = await h.open();
    const r = await s.createReceiver({ name: 'gh', provider: 'github', auth: 'hmac', keyExpr: null, summaryExpr: null, fallbackTaskId: null, policies: { completeOnClose: true, wakeOnReopen: true }, secret: 'x', tokenHash: null, now: T });
    const [KA, KB, KC, KD] = ['a', 'b', 'c', 'd'].map((x) => `${KEY}-${x}`) as [string, string, string, string];
    const a = await s.createTask({ agent: 'fixer', title: 'a', input: {}, keys: [KA], coalesceMs: 1000, now: T });
    const b = await s.createTask({ agent: 'fixer', title: 'b', input: {}, keys: [KB], coalesceMs: 500, now: T });
    const f = await s.createTask({ agent: 'triage', title: 'fallback', input: {}, keys: [], coalesceMs: 0, now: T });
    const c = await s.createTask({ agent: 'fixer', title: 'c', input: {}, keys: [KC], coalesceMs: 1000, now: T });
    await s.completeTask(c.id, T);
    const d = (id: string, key: string | null, occurredAt: number, over: Partial<NewDelivery> = {}): NewDelivery => ({
      receiverId: r.id,
      deliveryId: id,
      event: { ...ev(occurredAt), key },
      fallbackTaskId: null,
      coalesce: 'always',
      now: T + 10,
      ...over,
    });
    live(await s.ingestDelivery({ ...d('p1', KA, T + 2), now: T })); // opens A's window until T + 1000
    const out = await s.ingestDeliveries([
      d('p1', KA, T + 2), // 0: repeat of a stored delivery
      d('n1', KB, T + 5), // 1: B wakes
      d('n2', KA, T + 6), // 2: A's window is open: coalesced
      d('n1', KB, T + 5), // 3: repeat inside the batch
      d('n3', 'nobody', T + 7, { fallbackTaskId: f.id }), // 4: to the fallback task
      d('n4', 'nobody', T + 7), // 5: unmatched
      d('n5', KC, T + 8, { includeCompleted: true, coalesce: undefined }), // 6: a reopen finds the completed owner
      d('n4', 'nobody', T + 7), // 7: repeat of an unmatched one
      d('n6', KA, T + 1, { coalesce: 'unless_stale' }), // 8: older than what A saw: stale, not noted
      d('n7', KC, T + 9), // 9: C is completed: no active owner, no fallback → unmatched
      d('n8', KD, T + 3, { createTask: { agent: 'fixer', title: 'd', input: {}, keys: [], coalesceMs: 1000 } }), // 10: creates D
      d('n9', KD, T + 4), // 11: D, created just before in the same batch
    ]);
    const created = out[10]!.duplicate ? null : out[10]!.task;
    expect(created?.keys).toEqual([KD]);
    const view = out.map((x) => (x.duplicate ? ['dup', x.taskId] : [x.task?.id ?? null, x.stale, x.window, x.task?.pendingEvents ?? null, x.created]));
    expect(view).toEqual([
      ['dup', a.id],
      [b.id, false, { decision: 'wake' }, 1, false],
      [a.id, false, { decision: 'coalesced', trailingDueAt: T + 1000 }, 2, false],
      ['dup', b.id],
      [f.id, false, { decision: 'wake' }, 1, false],
      [null, false, null, null, false],
      [c.id, false, undefined, 1, false],
      ['dup', null],
      [a.id, true, null, 3, false],
      [null, false, null, null, false],
      [created!.id, false, { decision: 'wake' }, 1, true],
      [created!.id, false, { decision: 'coalesced', trailingDueAt: T + 1010 }, 2, false],
    ]);
    // Events were stored in the batch's order (ids rise), one per new delivery.
    const ids = out.flatMap((x) => (x.duplicate ? [] : [x.event.id]));
    expect(ids.length).toBe(9);
    expect([...ids].sort((x, y) => x - y)).toEqual(ids);
    // Stored state agrees with the answers; A's last event time did not move back to the stale one.
    const got = await Promise.all([a, b, f, c].map((t) => s.getTask(t.id)));
    expect(got.map((t) => [t?.pendingEvents, t?.lastEventAt])).toEqual([[3, T + 6], [1, T + 5], [1, T + 7], [1, T + 8]]);
    expect([got[0]?.trailingDueAt, got[1]?.windowUntil]).toEqual([T + 1000, T + 510]);
    expect((await s.listTaskEvents(null, 10)).map((e) => e.key)).toEqual([KC, 'nobody']);
    // Later repeats, alone, answer the same tasks.
    const again = await Promise.all(['n2', 'n3', 'n4', 'n5', 'n8'].map((id) => s.ingestDelivery(d(id, 'ignored', T + 20))));
    expect(again).toEqual([a.id, f.id, null, c.id, created!.id].map((taskId) => ({ duplicate: true, taskId })));
  });

  it('deliveries: two instances ingesting overlapping batches at once store each id once; every repeat answers its task', async () => {
    const s: Store = await h.open();
    const s2 = await h.another(s);
    const r = await s.createReceiver({ name: 'gh', provider: 'github', auth: 'hmac', keyExpr: null, summaryExpr: null, fallbackTaskId: null, policies: { completeOnClose: true, wakeOnReopen: true }, secret: 'x', tokenHash: null, now: T });
    const tasks = await Promise.all([0, 1, 2].map((i) => s.createTask({ agent: 'fixer', title: `t${i}`, input: {}, keys: [`${KEY}-${i}`], coalesceMs: 1000, now: T })));
    const d = (i: number): NewDelivery => ({ receiverId: r.id, deliveryId: `x${i}`, event: { ...ev(T + i), key: `${KEY}-${i % 3}` }, fallbackTaskId: null, coalesce: 'always', now: T + 1 });
    // Deliveries 0..29 to one instance and 15..44 to the other, in opposite orders: 15..29 reach both.
    const one = Array.from({ length: 30 }, (_, i) => d(i));
    const two = Array.from({ length: 30 }, (_, i) => d(44 - i));
    const [x, y] = await Promise.all([s.ingestDeliveries(one), s2.ingestDeliveries(two)]);
    const all = [...one.map((q, i) => [q, x[i]!] as const), ...two.map((q, i) => [q, y[i]!] as const)];
    expect(all.filter(([, res]) => !res.duplicate).length).toBe(45);
    for (const [q, res] of all) expect(res.duplicate ? res.taskId : res.task?.id).toBe(tasks[Number(q.deliveryId.slice(1)) % 3]!.id);
    expect((await Promise.all(tasks.map((t) => s.getTask(t.id)))).map((t) => t?.pendingEvents)).toEqual([15, 15, 15]);
  });

  it('deliveries: a key with a lone surrogate (JSON.parse makes them from "\\ud800") finds its task as the engine matches it', async () => {
    const s: Store = await h.open();
    const r = await s.createReceiver({ name: 'gh', provider: 'github', auth: 'hmac', keyExpr: null, summaryExpr: null, fallbackTaskId: null, policies: { completeOnClose: true, wakeOnReopen: true }, secret: 'x', tokenHash: null, now: T });
    const odd = JSON.parse('"alert-\\ud800-1"') as string;
    const t = await s.createTask({ agent: 'fixer', title: 'odd', input: {}, keys: [odd], coalesceMs: 1000, now: T });
    const [one] = await s.ingestDeliveries([{ receiverId: r.id, deliveryId: 'o1', event: { ...ev(T + 1), key: odd }, fallbackTaskId: null, now: T + 1 }]);
    expect(one?.duplicate === false && one.task?.id).toBe(t.id);
  });

  it('a completed fallback task takes no more events: unmatched, alone and in a batch (fresh-user finding: they were queued on it)', async () => {
    const s: Store = await h.open();
    const fb = await s.createTask({ agent: 'fixer', title: 'fallback', input: {}, keys: [], coalesceMs: 0, now: T });
    const r = await s.createReceiver({ name: 'am', provider: 'generic', auth: 'hmac', keyExpr: 'payload.k', summaryExpr: null, fallbackTaskId: fb.id, policies: { completeOnClose: false, wakeOnReopen: false }, secret: 'x', tokenHash: null, now: T });
    const d = (id: string, now: number): NewDelivery => ({ receiverId: r.id, deliveryId: id, event: { ...ev(now), key: 'nobody-owns-this' }, fallbackTaskId: fb.id, now });
    expect(live(await s.ingestDelivery(d('open-1', T + 1))).task?.id).toBe(fb.id);
    expect(await s.completeTask(fb.id, T + 2)).not.toBeNull();
    expect(live(await s.ingestDelivery(d('done-1', T + 3))).task).toBeNull();
    const batch = await s.ingestDeliveries([d('done-2', T + 4), d('done-3', T + 4)]);
    expect(batch.map((x) => [x.duplicate, x.duplicate ? 'dup' : (x.task?.id ?? null)])).toEqual([
      [false, null],
      [false, null],
    ]);
    expect((await s.getTask(fb.id))?.pendingEvents).toBe(1);
  });
}
