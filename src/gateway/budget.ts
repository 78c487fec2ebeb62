import { formatMicros } from '../core/money.js';
import { TOP_UP_HINT } from '../protocol/budget.js';
import { DEFAULT_RESERVATION_TTL_MS } from '../store/budgets.js';
import { noteCallStart, type ActivityStore } from './activity.js';
import { trackCall, untrackCall } from './live-calls.js';
import { callClosed, callOpened } from './open-calls.js';
import type { CallSignal } from './reply.js';
import type { RefusingBudget } from '../store/job-budgets.js';
import type { JobRow, NewModelCall, PendingCall, Store, TreeBudget } from '../store/types.js';

/** The Store methods the gateway's budget checks use. */
export type BudgetStore = Pick<Store, 'reserveBudget' | 'settleBudget'> & Partial<Pick<Store, 'extendBudgetReservation'>> & ActivityStore;

// The worst case of a call lives in worst-case.ts; re-exported for the modules and tests that take it from here.
export { DEFAULT_MAX_OUTPUT_TOKENS, worstCaseMicros } from './worst-case.js';

/** How a refusal names budget `b` of `job`'s path: "job tree R's budget" or "job N's budget". */
function budgetName(job: JobRow, b: TreeBudget): string {
  return b.jobId === undefined ? `job tree ${job.rootId}'s budget` : `job ${b.jobId}'s budget`;
}

/**
 * The message every wire format's budget refusal carries: names the budget that refused the
 * call — the tree's, or a sub-limit on the job's path (issue 6) — its figures (µ$ written as
 * $ with six decimals; the room held for resumed jobs' calls when there is some,
 * store/budget-holds.ts), what is left, the call's worst case `worst` µ$, and how to top it up.
 * `b` is the store's refusal (store/job-budgets.ts {@link RefusingBudget}): the short budget
 * with least room (`costs` how the worst case is named: a free count_tokens call names the
 * Messages call it counts); when several on the path are short (`shortOnPath`), the others are listed
 * too and the hint names each, from the top of the tree down (a sub-limit never grows past
 * what is left above it, so one top-up alone would not be enough).
 */
export function budgetMessage(job: JobRow, b: TreeBudget | null, worst: number, costs = 'this call may cost up to'): string {
  if (!b) return `budget exhausted: job tree ${job.rootId} has no budget`;
  const held = b.heldMicros ? ` and ${formatMicros(b.heldMicros)} held for the calls of resumed jobs` : '';
  const figures =
    `${formatMicros(b.spentMicros)} spent${held ? ',' : ' and'} ${formatMicros(b.reservedMicros)} reserved by calls in flight${held}, ` +
    `${formatMicros(b.remainingMicros)} left; ${costs} ${formatMicros(worst)}.`;
  const head =
    b.jobId !== undefined
      ? // issue 6: a child's sub-limit (its own, or an ancestor's it shares)
        `budget exhausted: job ${b.jobId}'s budget (sub-limit in job tree ${job.rootId}${b.jobId === job.id ? '' : `, shared by job ${job.id}`}) is ${formatMicros(b.limitMicros)}, ${figures}`
      : `budget exhausted: job tree ${job.rootId} (job ${job.id}) has a budget of ${formatMicros(b.limitMicros)}, ${figures}`;
  const short = (b as RefusingBudget).shortOnPath ?? [];
  // the least top-up that resumes the job is more than this call's worst case (room for the
  // larger request a resumed harness sends, and for paused siblings first in line): `flotilla
  // budget` says it (a fresh tester added the worst case and the job stayed paused)
  // room held for resumed jobs comes back by itself: when it alone keeps the call out, the job
  // may wait instead of paying (fresh tester: the refusal only said "Top up with")
  const wait = (short.length ? short : [b]).every((x) => x.heldMicros && x.spentMicros + worst <= x.limitMicros)
    ? `. Or wait: the room held for resumed jobs comes back as each makes its call or ends (flotilla budget ${job.rootId} names them), and this job then resumes without a top-up if its call fits.`
    : '';
  if (short.length < 2) return `${head}${TOP_UP_HINT}flotilla budget ${b.jobId ?? job.rootId} --add <USD> (flotilla budget ${job.id} says the least that resumes this job)${wait}`;
  const others = short.filter((x) => x.jobId !== b.jobId);
  return (
    `${head} Also short: ${others.map((x) => `${budgetName(job, x)} (${formatMicros(x.remainingMicros)} left of ${formatMicros(x.limitMicros)})`).join(', ')}. ` +
    `${TOP_UP_HINT.trimStart()}${short.map((x) => `flotilla budget ${x.jobId ?? job.rootId} --add <USD>`).join(', then ')} (${short.length} budgets are short: one alone is not enough)${wait}`
  );
}


/**
 * A paused job's {@link budgetMessage} once it was cancelled: why it paused, without the
 * top-up advice (no top-up resumes an ended job: a user who followed it was refused, fresh-user
 * finding), and that it was cancelled while paused. Another text is returned as it is.
 */
export function cancelledWhilePaused(message: string): string {
  const at = message.indexOf(TOP_UP_HINT);
  return at === -1 ? message : `${message.slice(0, at)} Cancelled while paused: no top-up resumes it.`;
}

/**
 * The error a job whose agent says `onBudgetExhausted: fail` ends with: the refusal's
 * {@link budgetMessage} without the top-up advice (no top-up revives a failed job), and why it
 * failed instead of pausing. Another text gets the same sentence appended.
 */
export function failedOnBudget(message: string): string {
  const at = message.indexOf(TOP_UP_HINT);
  return `${at === -1 ? message : message.slice(0, at)} The job failed: its agent says onBudgetExhausted: fail.`;
}

/** A reservation held for one call: settle it exactly once. */
export interface Reservation {
  readonly micros: number;
  /** The store's reservation row id (charged by the sweeper after its expiry if never settled, H7). */
  readonly id: number;
  /**
   * Charges `costMicros` and releases the reservation (0 = release only); with `call`, its
   * ledger row is written in the same store transaction. Later calls do nothing (and return
   * false: the caller then records `call` itself if it needs to).
   */
  settle(costMicros: number, call?: NewModelCall): Promise<boolean>;
}

/**
 * Reserves `worst` µ$ for a call of `job`'s tree, held in the store until settled or, if this
 * process dies first, until `ttlMs` after `now` (the sweeper then charges it as the call's
 * cost, recording `call` as a ledger row of unknown usage: H7, store/expired-reservations.ts).
 * With the call's `signal`, the call is tracked as live until settled (live-calls.ts: a
 * cancelled job's calls are aborted).
 * @returns the reservation, or `{ refused: message }` when the call does not fit.
 */
export async function reserve(store: BudgetStore, job: JobRow, worst: number, now: number, ttlMs?: number, signal?: CallSignal, call?: PendingCall): Promise<Reservation | { refused: string; budget: TreeBudget | null }> {
  // Calls in flight count as activity for the runner's idle limit (activity.ts). Noted in the
  // same turn as the reservation (on SQLite: one group commit, sqlite-group-commit.ts) and not
  // awaited; a call that is refused (or fails) ends its note at once.
  const activity = noteCallStart(store, job, now);
  let r: Awaited<ReturnType<BudgetStore['reserveBudget']>>;
  try {
    // A child's call also reserves against the sub-limits on its path (issue 6, job-budgets.ts).
    // A job a top-up resumed holds room until its call is admitted (store/budget-holds.ts):
    // its own hold does not keep it out and ends with this reservation (`holder`; its row says it may hold one).
    const holder = job.pausedNeedMicros !== null && job.pausedNeedMicros !== undefined ? job.id : undefined;
    r = await store.reserveBudget(job.rootId, worst, now, ttlMs, job.parentId !== null && job.parentId !== undefined ? job.id : undefined, call, holder);
  } catch (err) {
    activity.end();
    throw err;
  }
  if (!r || !r.ok) {
    activity.end();
    return { refused: budgetMessage(job, r?.budget ?? null, worst), budget: r?.budget ?? null };
  }
  let settled = false;
  const id = r.reservationId;
  // open until its settle is written: a stopping server waits for it (open-calls.ts)
  callOpened(store, 'reservation');
  // While the call runs its reservation stays (see keepAlive): a stream may outlast the TTL.
  const kept = keepAlive(store, id, ttlMs ?? DEFAULT_RESERVATION_TTL_MS);
  const tracked = trackCall(store, job.id, job.attempt, signal);
  return {
    micros: worst,
    id,
    async settle(costMicros: number, call?: NewModelCall) {
      if (settled) return false;
      settled = true;
      kept?.release();
      if (tracked !== null) untrackCall(job.id, tracked);
      const done = store.settleBudget(job.rootId, id, costMicros, Date.now(), call);
      activity.end(); // issued in the same turn: on SQLite one commit with the settle
      try {
        await done;
      } finally {
        callClosed(store, 'reservation');
      }
      if (settleWatchers.size !== 0) notifySettled(store, job.rootId);
      return true;
    },
  };
}

/** The tree id {@link watchSettles}'s watchers are woken with by {@link wakeBudgetWaiters}: every tree (ids start at 1). */
export const ANY_TREE = 0;

/**
 * Wakes the calls of `store` waiting for budget (budget-wait.ts) on tree `rootId` (default
 * {@link ANY_TREE}: every tree), as a settle of their tree would: a stopping server's (gateway.ts
 * drain), a job this process just paused for budget (its waiting calls then find it paused).
 */
export function wakeBudgetWaiters(store: object, rootId = ANY_TREE): void {
  notifySettled(store, rootId);
}

/** Per store: what runs after each settle of one of its trees ({@link watchSettles}). */
const settleWatchers = new Map<object, Array<(rootId: number) => void>>();

function notifySettled(store: object, rootId: number): void {
  const fns = settleWatchers.get(store);
  if (fns === undefined) return;
  // a copy: a watcher may stop itself (budget-wait.ts) while this runs
  for (const fn of [...fns]) {
    try {
      fn(rootId);
    } catch {
      // a watcher's error must not fail the call's settle
    }
  }
}

/**
 * Calls `fn(rootId)` after every settle (in this process) of a reservation made in `store`
 * (budget-wait.ts: a call waiting for calls in flight tries again at once). Synchronous;
 * errors are swallowed. @returns a function that stops it.
 */
export function watchSettles(store: object, fn: (rootId: number) => void): () => void {
  let fns = settleWatchers.get(store);
  if (fns === undefined) {
    fns = [];
    settleWatchers.set(store, fns);
  }
  fns.push(fn);
  return () => {
    const list = settleWatchers.get(store);
    if (!list) return;
    const i = list.indexOf(fn);
    if (i >= 0) list.splice(i, 1);
    if (list.length === 0) settleWatchers.delete(store);
  };
}

/** Live reservations by TTL (ms), each TTL with one timer (unref'd) for all of them. */
const live = new Map<number, Set<{ store: BudgetStore; id: number }>>();

/**
 * Keeps reservation `id` alive while its call runs: the sweeper would otherwise take it for the
 * reservation of a dead gateway once its TTL passed mid-call (a fresh user's stream outlasting
 * a 10 s TTL did) and charge its worst case. Every third of the TTL (at least 1 s) one shared
 * timer moves the expiry of every live reservation of that TTL to a full TTL from then; no
 * timer per call (this runs on every model call). A process that dies stops it, and the
 * sweeper charges the reservation within one TTL (H7; a settle that still comes replaces that
 * charge). Null when the store cannot extend reservations.
 * @returns `release()`, to call at settle.
 */
function keepAlive(store: BudgetStore, id: number, ttlMs: number): { release(): void } | null {
  if (!store.extendBudgetReservation) return null;
  let set = live.get(ttlMs);
  if (!set) {
    const entries = new Set<{ store: BudgetStore; id: number }>();
    set = entries;
    live.set(ttlMs, entries);
    setInterval(() => {
      const until = Date.now() + ttlMs;
      // a failed touch: the next tick tries again, or the sweeper charges it (as for a dead process)
      for (const e of entries) e.store.extendBudgetReservation!(e.id, until).catch(() => undefined);
    }, Math.max(1000, Math.floor(ttlMs / 3))).unref();
  }
  const entry = { store, id };
  set.add(entry);
  const owner = set;
  return { release: () => void owner.delete(entry) };
}
