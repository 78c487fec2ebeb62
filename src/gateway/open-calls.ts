/**
 * Model calls whose budget reservation is not settled yet, per store: reserved, with the
 * upstream or the reply still going, or their ledger row being written. A stopping server waits
 * for them (gateway.ts drain) before its store closes: it closed the store under them, and each
 * call's ledger row and settle failed ("The database connection is not open"), leaving its
 * reservation for the sweeper to charge at the worst case minutes later (a fresh user stopped
 * `flotilla up` with 50 calls in flight). A counter per store, no timer: this runs on every call.
 */

interface Open {
  n: number;
  /** Waiting for n to reach 0. */
  idle: Array<() => void>;
}

const byStore = new Map<object, Open>();

/** A call reserved in `store` (budget.ts reserve). */
export function callOpened(store: object): void {
  const o = byStore.get(store);
  if (o === undefined) byStore.set(store, { n: 1, idle: [] });
  else o.n += 1;
}

/** A call of `store` settled, or failed to (budget.ts settle): once per {@link callOpened}. */
export function callClosed(store: object): void {
  const o = byStore.get(store);
  if (o === undefined) return;
  o.n -= 1;
  if (o.n > 0) return;
  byStore.delete(store);
  for (const wake of o.idle) wake();
}

/** How many calls of `store` are open. */
export function openCallCount(store: object): number {
  return byStore.get(store)?.n ?? 0;
}

/**
 * Resolves once no call of `store` is open, or after `ms` milliseconds, whichever comes first.
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
    o.idle.push(wake);
  });
}
