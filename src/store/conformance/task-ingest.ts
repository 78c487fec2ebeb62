import { expect, it } from 'vitest';
import type { IngestResult, NewTaskEvent, Store } from '../types.js';
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
    // A repeat is a duplicate and changes nothing.
    expect(await d('a', T + 60, T + 6000)).toEqual({ duplicate: true });
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
}
