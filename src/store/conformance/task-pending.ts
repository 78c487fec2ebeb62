import { expect, it } from 'vitest';
import type { NewDelivery, Store } from '../types.js';
import { T, type Harness } from './harness.js';

const KEY = 'https://github.com/acme/api/issues/';

/**
 * The stored pending-event counter of tasks (0017, `pendingEvents`): it must equal the number
 * of the task's events no turn has taken, whichever way events come (batches from two
 * instances at once, one delivery alone, addTaskEvent) and go (a claimed turn takes them, an
 * abandoned one puts them back).
 */
export function taskPendingTests(h: Harness): void {
  /** The task's events no turn has taken, counted from the events themselves (not the counter). */
  async function pendingListed(s: Store, taskId: number): Promise<number> {
    const { events } = await s.listTaskInputs(taskId, { fromTurn: 1_000_000, toTurn: 1_000_000, pending: true });
    return events.filter((e) => e.turn === null).length;
  }

  it('pending events: the counter follows concurrent batches of two instances, single deliveries, added events, claims and abandons', async () => {
    const s: Store = await h.open();
    const s2 = await h.another(s);
    const r = await s.createReceiver({ name: 'gh', provider: 'github', auth: 'hmac', keyExpr: null, summaryExpr: null, fallbackTaskId: null, policies: { completeOnClose: true, wakeOnReopen: true }, secret: 'x', tokenHash: null, now: T });
    const [a, b] = await Promise.all(['a', 'b'].map((k) => s.createTask({ agent: 'fixer', title: k, input: {}, keys: [KEY + k], coalesceMs: 1000, now: T })));
    let n = 0;
    /** `count` deliveries alternating a, b (a first), each with a new id. */
    const batch = (count: number): NewDelivery[] =>
      Array.from({ length: count }, (_, i) => {
        n++;
        return { receiverId: r.id, deliveryId: `p${n}`, event: { receiverId: r.id, key: KEY + (i % 2 ? 'b' : 'a'), kind: 'issue_comment.created', actor: 'o', summary: `c${n}`, occurredAt: T + n }, fallbackTaskId: null, coalesce: 'always', now: T + 5 };
      });
    const added = { receiverId: null, key: KEY + 'a', kind: 'note', actor: null, summary: 'added', occurredAt: T + 1 };

    // Round 1, all at once: 2 × 20 in batches (10 + 10 to each task), one alone to a, one added to a, and a repeat of a batch's first delivery (adds nothing).
    const first = batch(20);
    await Promise.all([s.ingestDeliveries(first), s2.ingestDeliveries(batch(20)), s.ingestDelivery(batch(1)[0]!), s2.addTaskEvent(a!.id, added, T + 6), s2.ingestDeliveries([first[0]!])]);
    expect([(await s.getTask(a!.id))?.pendingEvents, (await s2.getTask(b!.id))?.pendingEvents]).toEqual([22, 20]);
    expect([await pendingListed(s, a!.id), await pendingListed(s, b!.id)]).toEqual([22, 20]);

    // A turn takes a's 22; the counter drops to 0 and counts from there.
    const claimA = await s2.claimTaskTurn(a!.id, T + 10);
    expect([claimA?.events.length, claimA?.task.pendingEvents, (await s.getTask(a!.id))?.pendingEvents]).toEqual([22, 0, 0]);

    // Round 2: batches on both instances race a claim of b; the claim takes what committed before it, the rest stays pending.
    const [, , claimB] = await Promise.all([s.ingestDeliveries(batch(30)), s2.ingestDeliveries(batch(30)), s.claimTaskTurn(b!.id, T + 11)]);
    const taken = claimB?.events.length ?? 0;
    expect(taken).toBeGreaterThanOrEqual(20); // round 1's 20 at least
    expect([(await s.getTask(a!.id))?.pendingEvents, (await s.getTask(b!.id))?.pendingEvents]).toEqual([30, 20 + 30 - taken]);
    expect([await pendingListed(s, a!.id), await pendingListed(s, b!.id)]).toEqual([30, 20 + 30 - taken]);

    // b's turn abandoned: its events are pending again (all 50); a's running turn is not touched.
    await s2.abandonTaskTurn(b!.id, claimB!.turn, T + 12);
    expect([(await s.getTask(a!.id))?.pendingEvents, (await s.getTask(b!.id))?.pendingEvents]).toEqual([30, 50]);
    expect([await pendingListed(s, a!.id), await pendingListed(s, b!.id)]).toEqual([30, 50]);
    // The batch path reports the counter as it stands after each delivery.
    const [next] = await s2.ingestDeliveries(batch(1));
    expect(next?.duplicate === false && next.task?.pendingEvents).toBe(31);
  });
}
