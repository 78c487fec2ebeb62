/**
 * budget-wait.ts over the in-memory store (figures in µ$): which refusals wait, when the wait
 * ends, and that a settle in this process wakes a waiting call at once. The end-to-end cases
 * (real gateways, stores and concurrent calls) are in budget-in-flight.test.ts.
 */
import { describe, expect, it } from 'vitest';
import type { TreeBudget } from '../store/types.js';
import { abandonedWait, reserveOrWait, refusedByCallsInFlight, type BudgetRefusal } from './budget-wait.js';
import { MemoryGatewayStore } from './memory-store.js';
import { abortJobCalls, liveCallCount } from './live-calls.js';
import type { CallSignal } from './reply.js';

const fig = (limit: number, spent: number, reserved: number): TreeBudget => ({ rootId: 1, limitMicros: limit, spentMicros: spent, reservedMicros: reserved, remainingMicros: Math.max(0, limit - spent - reserved) });

describe('refusedByCallsInFlight', () => {
  it('only when spent + the worst case fit the limit and other calls hold reservations', () => {
    expect(refusedByCallsInFlight(fig(1_000_000, 900_000, 80_000), 40_000)).toBe(true);
    expect(refusedByCallsInFlight(fig(1_000_000, 900_000, 80_000), 100_000)).toBe(true); // exactly fits
    expect(refusedByCallsInFlight(fig(1_000_000, 990_000, 0), 40_000)).toBe(false);
    expect(refusedByCallsInFlight(fig(1_000_000, 970_000, 20_000), 40_000)).toBe(false); // out of money whatever settles
    expect(refusedByCallsInFlight(null, 1)).toBe(false);
  });
});

describe('reserveOrWait', () => {
  function setUp(spent: number) {
    const store = new MemoryGatewayStore();
    const job = store.addJob('flj_wait_0123456789abcdefghijkl', { id: 1, budgetMicros: 1_000_000 });
    store.budgets.set(1, { limit: 1_000_000, spent, reserved: 0 });
    return { store, job };
  }

  it('a call kept out by a call in flight is reserved as soon as that one settles in this process', async () => {
    const { store, job } = setUp(900_000);
    const first = await reserveOrWait(store, job, 60_000, { now: Date.now(), waitMs: 0 });
    if ('refused' in first) throw new Error('must fit');
    const t0 = Date.now();
    const second = reserveOrWait(store, job, 60_000, { now: t0, waitMs: 10_000, pollMs: 10_000 });
    setTimeout(() => void first.settle(1_530), 100);
    const got = await second;
    expect('refused' in got).toBe(false);
    expect(Date.now() - t0).toBeLessThan(2_000); // woken by the settle, not the 10 s poll
    expect(store.budgets.get(1)).toEqual({ limit: 1_000_000, spent: 901_530, reserved: 60_000 });
  });

  it('gives up after waitMs with inFlight true; a call that cannot fit at all is refused at once with inFlight false', async () => {
    const { store, job } = setUp(900_000);
    const first = await reserveOrWait(store, job, 60_000, { now: Date.now(), waitMs: 0 });
    expect('refused' in first).toBe(false);
    const t0 = Date.now();
    const waited = await reserveOrWait(store, job, 60_000, { now: t0, waitMs: 200, pollMs: 50 });
    expect(Date.now() - t0).toBeGreaterThanOrEqual(190);
    expect(waited).toMatchObject({ inFlight: true, budget: { spentMicros: 900_000, reservedMicros: 60_000 } });
    expect(waited).not.toHaveProperty('cut'); // the wait ran out: no one cut it
    expect(abandonedWait(waited as BudgetRefusal)).toBeNull();
    const t1 = Date.now();
    const never = await reserveOrWait(store, job, 100_001, { now: t1, waitMs: 5_000 });
    expect(never).toMatchObject({ inFlight: false, refused: expect.stringMatching(/^budget exhausted/) });
    expect(Date.now() - t1).toBeLessThan(1_000);
  });

  it('stops waiting when the client goes away', async () => {
    const { store, job } = setUp(900_000);
    await reserveOrWait(store, job, 60_000, { now: Date.now(), waitMs: 0 });
    const ac = new AbortController();
    const t0 = Date.now();
    setTimeout(() => ac.abort(), 100);
    const got = await reserveOrWait(store, job, 60_000, { now: t0, waitMs: 10_000, pollMs: 10_000, signal: ac.signal });
    expect(got).toMatchObject({ inFlight: true, cut: 'client_gone' });
    expect(abandonedWait(got as BudgetRefusal)).toEqual({ status: 0, refused: 'client_gone', message: 'the client went away while the call waited for budget room' });
    expect(Date.now() - t0).toBeLessThan(2_000);
  });

  it('a call waiting when its job ends (the gateway cuts its calls) stops waiting and never reserves, even when budget frees at once', async () => {
    // fresh-user finding: 10 calls waiting when their job was cancelled went upstream, charged, once budget freed
    const { store, job } = setUp(900_000);
    const first = await reserveOrWait(store, job, 60_000, { now: Date.now(), waitMs: 0 });
    if ('refused' in first) throw new Error('must fit');
    const signal = abortableSignal();
    const waiting = reserveOrWait(store, job, 60_000, { now: Date.now(), waitMs: 10_000, pollMs: 10_000, signal });
    await new Promise((r) => setTimeout(r, 50));
    expect(liveCallCount(job.id)).toBe(1); // the waiting call is one of its job's live calls
    expect(abortJobCalls(store, job.id)).toBe(1);
    await first.settle(1_000); // frees the room it waited for, in the same turn
    const got = await waiting;
    expect(got).toMatchObject({ inFlight: true, cut: 'job_ended' });
    expect(abandonedWait(got as BudgetRefusal)).toMatchObject({ status: 502, refused: 'job_ended' });
    expect(store.budgets.get(1)).toEqual({ limit: 1_000_000, spent: 901_000, reserved: 0 });
    expect(liveCallCount(job.id)).toBe(0);
  });
});

/** A CallSignal the gateway can abort (as the node adapter's is): what live-calls.ts tracks. */
function abortableSignal(): CallSignal & { abort(): void } {
  const listeners = new Set<() => void>();
  const s = {
    aborted: false,
    addEventListener: (_: 'abort', l: () => void) => void listeners.add(l),
    removeEventListener: (_: 'abort', l: () => void) => void listeners.delete(l),
    abort() {
      if (s.aborted) return;
      s.aborted = true;
      for (const l of [...listeners]) l();
    },
  };
  return s;
}
