/**
 * Model calls not finished yet, per store: in their route, or holding a reservation whose
 * settle (and ledger row) is not written yet. A stopping server waits
 * for them (gateway.ts drain) before its store closes: it closed the store under them, and each
 * call's ledger row and settle failed ("The database connection is not open"), leaving its
 * reservation for the sweeper to charge at the worst case minutes later (a fresh user stopped
 * `flotilla up` with 50 calls in flight). A counter per store, no timer: this runs on every call.
 * A call counts from the request reaching its route (gateway.ts handle) to its reply, and from
 * its reservation to its settle (budget.ts): a call still waiting for budget (budget-wait.ts)
 * is one too, and once the store stops taking calls ({@link stopTakingCalls}) it stops waiting
 * and goes nowhere upstream (a fresh user's waiting call reserved after the drain had ended).
 */

/** What keeps a call open: its request in its route, or its reservation not yet settled. */
export type OpenPart = 'request' | 'reservation';

interface Open {
  request: number;
  reservation: number;
  /** Waiting for both to reach 0. */
  idle: Array<() => void>;
}

const byStore = new Map<object, Open>();

/** A call of `store` entered its route (`request`, gateway.ts) or reserved its worst case (`reservation`, budget.ts). */
export function callOpened(store: object, part: OpenPart): void {
  let o = byStore.get(store);
  if (o === undefined) byStore.set(store, (o = { request: 0, reservation: 0, idle: [] }));
  o[part] += 1;
}

/** The matching end of {@link callOpened}: the route answered; the reservation settled (or failed to). */
export function callClosed(store: object, part: OpenPart): void {
  const o = byStore.get(store);
  if (o === undefined) return;
  o[part] -= 1;
  if (o.request > 0 || o.reservation > 0) return;
  byStore.delete(store);
  for (const wake of o.idle) wake();
}

const stopping = new WeakSet<object>();

/** From now on calls of `store` stop waiting for budget and none goes upstream (a stopping server: gateway.ts drain). */
export function stopTakingCalls(store: object): void {
  stopping.add(store);
}

/** False once {@link stopTakingCalls} ran for `store`. */
export function takesCalls(store: object): boolean {
  return !stopping.has(store);
}

/** How many calls of `store` hold a reservation not settled yet (the ones a stop must not lose). */
export function openCallCount(store: object): number {
  return byStore.get(store)?.reservation ?? 0;
}

/**
 * Resolves once no call of `store` is open (no request in a route, no reservation unsettled),
 * or after `ms` milliseconds, whichever comes first.
 * @returns true when none is open.
 */
export function untilNoOpenCalls(store: object, ms: number): Promise<boolean> {
  const o = byStore.get(store);
  if (o === undefined) return Promise.resolve(true);
  return new Promise<boolean>((resolve) => {
    const wake = () => {
      clearTimeout(timer);
      resolve(true);
    };
    const timer = setTimeout(() => {
      const i = o.idle.indexOf(wake);
      if (i >= 0) o.idle.splice(i, 1);
      resolve(false);
    }, ms);
    // a wait given up on (gateway.ts drain, hurried) must not keep the process alive
    timer.unref();
    o.idle.push(wake);
  });
}
