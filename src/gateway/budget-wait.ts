import { formatMicros } from '../core/money.js';
import type { RefusingBudget } from '../store/job-budgets.js';
import type { JobRow, PendingCall, Store, TreeBudget } from '../store/types.js';
import { ANY_TREE, reserve, watchSettles, type BudgetStore, type Reservation } from './budget.js';
import { cutReason, trackCall, untrackCall, type CutReason, type LiveCall } from './live-calls.js';
import { takesCalls } from './open-calls.js';
import type { CallSignal } from './reply.js';

/**
 * M2: a call refused only because of other calls in flight — the refusing budget's spent plus
 * this call's worst case fit its limit, but not with the others' live reservations on top —
 * is not out of money: it waits a little for them to settle (at their real, usually much lower
 * cost) and is reserved then. If the calls in flight still hold the room when the wait ends,
 * the caller answers a RETRYABLE refusal (Anthropic 429 `rate_limit_error`, OpenAI 429
 * `rate_limit_exceeded`, both with `retry-after`; harness-facts.md: Claude Code retries 429s 10
 * times over ~3 minutes, honouring retry-after) and the job is NOT paused. Only a call that does
 * not fit even with nothing in flight gets the non-retryable budget error and pauses its job
 * (issue 3's rule, gateway.ts). With issue 3's concurrency case ($1.00 budget, $0.90 spent,
 * calls of ~$0.04 worst case): two are reserved, the others wait, then go on as the first
 * settle, or get the retryable 429.
 *
 * While waiting, a settle of the same tree in this process wakes the call at once (budget.ts
 * watchSettles); settles on other replicas and the sweeper's charges are seen by polling every
 * {@link IN_FLIGHT_POLL_MS}.
 */

/** How long a call refused only by calls in flight waits for them by default, ms (GatewayConfig.budgetWaitMs). */
export const DEFAULT_IN_FLIGHT_WAIT_MS = 20_000;

/**
 * How often a waiting call tries again when no settle in this process wakes it, ms (settles on
 * other replicas, the sweeper's charges). Each try is a reservation attempt (a conditional
 * UPDATE and a read) and an activity note: once a second keeps that small.
 */
export const IN_FLIGHT_POLL_MS = 1_000;

/**
 * The `retry-after` of the retryable refusal, seconds. With Claude Code's 10 retries a call
 * keeps its place for about 10 × (wait + this) ≈ 4 minutes with the defaults.
 */
export const IN_FLIGHT_RETRY_AFTER_S = 5;

/**
 * True when the refusal of a call costing up to `worst` µ$ (figures `b`) came only from other
 * calls' reservations: on every budget the call did not fit (`b`, or each of `b.shortOnPath`
 * when several on the job's path were short: store/job-budgets.ts RefusingBudget), its spent
 * and the room held for resumed jobs' calls plus `worst` fit the limit. One budget really spent makes it a refusal for budget.
 */
export function refusedByCallsInFlight(b: TreeBudget | null, worst: number): boolean {
  if (b === null) return false;
  const short = (b as RefusingBudget).shortOnPath ?? [b];
  // room held for resumed jobs' calls (store/budget-holds.ts) is not in flight: it counts as spent
  return short.every((x) => x.reservedMicros > 0 && x.spentMicros + (x.heldMicros ?? 0) + worst <= x.limitMicros);
}

/** A refused call: the message, the figures that refused it, and whether only calls in flight did (retryable, M2). */
export interface BudgetRefusal {
  refused: string;
  budget: TreeBudget | null;
  inFlight: boolean;
  /** The server is stopping (open-calls.ts stopTakingCalls): answer a retryable 503 (errors.ts shuttingDown), nothing reserved. */
  stopped?: true;
  /**
   * The wait ended because the call's signal aborted: its client went away (`client_gone`: no
   * reply reaches anyone), or the gateway cut it (live-calls.ts: its job's attempt ended; the
   * server stopping sets `stopped` too); or because its job's attempt stopped running while it
   * waited (read from the store at each wake: `job_paused` when the job is paused, with
   * {@link BudgetRefusal.pausedJob}; else `job_ended`). Such a call is no refusal for calls in
   * flight: {@link abandonedWait} says how it is recorded and answered (`job_paused`: as a call
   * of a paused job, with the budget error, by the route).
   */
  cut?: CutReason | 'client_gone' | 'job_paused';
  /** With `cut: 'job_paused'`: the job as the store has it now (paused, its need and reason), for the budget error's text (job-auth.ts pausedJobMessage). */
  pausedJob?: JobRow;
}

/**
 * How a call whose budget wait was cut short (`r.cut`) is recorded and answered, or null when
 * it was not: a client gone → HTTP status 0 (no reply was sent: it was recorded 429 before, a
 * reply nobody read) and refused `client_gone`; its job's attempt ended → 502 refused
 * `job_ended`, not retryable (the job's token no longer authenticates: a 429 to retry in 5 s
 * only led to a 401). The server stopping is `r.stopped` (errors.ts shuttingDown).
 */
export function abandonedWait(r: BudgetRefusal): { status: number; refused: string; message: string } | null {
  // a paused job's call: the route answers the budget error of a paused job (its wire format's)
  if (r.cut === 'job_paused') return null;
  if (r.cut === 'client_gone') return { status: 0, refused: 'client_gone', message: 'the client went away while the call waited for budget room' };
  if (r.cut === 'job_ended') return { status: 502, refused: 'job_ended', message: "this call was cut while it waited for budget room: its job's attempt ended (cancelled, lost, finished or retried), and its token no longer authenticates" };
  return null;
}

/** The {@link BudgetRefusal.cut} of a call whose `signal` aborted. */
function cutOf(signal: CallSignal): CutReason | 'client_gone' {
  return cutReason(signal) ?? 'client_gone';
}

/**
 * How the attempt of `job` stands now, read from the store after a wait: null while it still
 * runs (or the store cannot say: no `getJob`), else the job's row, paused (`paused`: for budget,
 * or resumed by a top-up and waiting for the stopped process to exit) or ended or moved on to a
 * newer attempt (`ended`). A call of a job a sibling call paused for budget waited on, and a top-up
 * then let it through: it spent the room the top-up was sized for, meant for the resumed attempt
 * (fresh-tester finding); the attempt being stopped must spend nothing more.
 */
async function attemptStopped(store: WaitStore, job: JobRow): Promise<{ paused: JobRow } | 'ended' | null> {
  if (!store.getJob) return null;
  const now = await store.getJob(job.id);
  if (now === null) return 'ended';
  if (now.attempt !== job.attempt) return 'ended';
  if (now.status === 'running' || now.status === 'assigned') return null;
  return now.status === 'paused' ? { paused: now } : 'ended';
}

/** The store {@link reserveOrWait} uses: budget.ts's, and the job's row when it can read it (a waiting call checks its attempt still runs). */
export type WaitStore = BudgetStore & Partial<Pick<Store, 'getJob'>>;

/** Options of {@link reserveOrWait}. */
export interface WaitOptions {
  /** Epoch ms the call arrived (its first try's time). */
  now: number;
  ttlMs?: number;
  signal?: CallSignal;
  call?: PendingCall;
  /** Longest wait, ms (default {@link DEFAULT_IN_FLIGHT_WAIT_MS}; 0: refuse at once). */
  waitMs?: number;
  /** Poll interval, ms (default {@link IN_FLIGHT_POLL_MS}). */
  pollMs?: number;
}

/**
 * Reserves `worst` µ$ for a call of `job` (budget.ts reserve), waiting up to `o.waitMs` while
 * the only obstacle is other calls in flight (see the module comment). Stops waiting when the
 * client goes away (`o.signal` aborted), and when its job's attempt no longer runs at a wake
 * (paused for budget: `cut` `job_paused`; ended, or a newer attempt: `job_ended`).
 * @returns the reservation, or the refusal: `inFlight` true when, at the end of the wait (or
 *   when the client left), the call still fits the budget but for the calls in flight.
 */
export async function reserveOrWait(store: WaitStore, job: JobRow, worst: number, o: WaitOptions): Promise<Reservation | BudgetRefusal> {
  const waitMs = Math.max(0, o.waitMs ?? DEFAULT_IN_FLIGHT_WAIT_MS);
  const deadline = o.now + waitMs;
  let now = o.now;
  // A waiting call is one of its job's live calls (live-calls.ts): a cancel, or the job's attempt
  // ending, aborts its signal, and it then never reserves nor goes upstream (fresh-user finding:
  // 10 calls waiting when their job was cancelled went upstream and were charged once budget freed).
  let waiting: LiveCall | null = null;
  try {
    for (;;) {
      const held = await reserve(store, job, worst, now, o.ttlMs, o.signal, o.call);
      if (!('refused' in held)) {
        if (takesCalls(store)) return held;
        // reserved as the server began to stop: released, and the call goes nowhere upstream
        await held.settle(0);
        return { refused: 'the gateway is shutting down', budget: null, inFlight: false, stopped: true };
      }
      const inFlight = refusedByCallsInFlight(held.budget, worst);
      now = Date.now();
      if (!takesCalls(store)) return { ...held, inFlight, stopped: true };
      if (inFlight && o.signal?.aborted) return { ...held, inFlight, cut: cutOf(o.signal) };
      if (!inFlight || now >= deadline) return { ...held, inFlight };
      waiting ??= trackCall(store, job.id, job.attempt, o.signal);
      await settleOrTimeout(store, job.rootId, Math.min(deadline - now, o.pollMs ?? IN_FLIGHT_POLL_MS), o.signal);
      // the client went away, or the gateway cut the call (its job ended, the server stops) while it waited
      if (o.signal?.aborted) return takesCalls(store) ? { ...held, inFlight, cut: cutOf(o.signal) } : { ...held, inFlight, stopped: true, cut: cutOf(o.signal) };
      // its job paused for budget (a sibling call did not fit) or its attempt ended meanwhile,
      // perhaps through another replica: it never reserves, whatever room a top-up made
      const stopped = await attemptStopped(store, job);
      if (stopped === 'ended') return { ...held, inFlight, cut: 'job_ended' };
      if (stopped !== null) return { ...held, inFlight, cut: 'job_paused', pausedJob: stopped.paused };
      now = Date.now();
    }
  } finally {
    if (waiting !== null) untrackCall(job.id, waiting);
  }
}

/** Resolves at the next settle of tree `rootId` in this process, after `ms`, or when `signal` aborts, whichever is first. */
function settleOrTimeout(store: BudgetStore, rootId: number, ms: number, signal?: CallSignal): Promise<void> {
  return new Promise((resolve) => {
    let finished = false;
    const done = () => {
      if (finished) return;
      finished = true;
      clearTimeout(timer);
      stop();
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    const stop = watchSettles(store, (root) => {
      if (root === rootId || root === ANY_TREE) done();
    });
    if (signal?.aborted) done();
    else signal?.addEventListener('abort', done, { once: true });
  });
}

/**
 * The message of the retryable refusal (M2): names the tree (or the child's sub-limit), its
 * figures, that calls in flight hold the room this call needs, and when to try again
 * (`retryIn` false: not; the OpenAI shape says it in its own words, openai-wire.ts).
 */
export function inFlightMessage(job: JobRow, b: TreeBudget | null, worst: number, retryIn = true): string {
  const whose = b?.jobId !== undefined ? `job ${b.jobId}'s budget (sub-limit in job tree ${job.rootId})` : `job tree ${job.rootId}'s budget`;
  const figures = b ? ` of ${formatMicros(b.limitMicros)}: ${formatMicros(b.spentMicros)} spent, ${formatMicros(b.reservedMicros)} held by calls in flight` : '';
  // it fits in what is not spent, not beside what those calls hold: whether it fits once they
  // settle depends on what they cost (at most what they hold; "fits once those calls settle"
  // promised room the settles did not leave: fresh-tester finding)
  const left = b ? ` ${formatMicros(b.limitMicros - b.spentMicros)} not spent,` : ' what is not spent,';
  return (
    `budget busy: ${whose}${figures}; this call may cost up to ${formatMicros(worst)}: it fits in the${left} but not beside what those calls hold, and may once they settle (each is charged what it used, at most what it holds). ` +
    (retryIn ? `Not out of budget: retry in ${IN_FLIGHT_RETRY_AFTER_S}s (job ${job.id})` : `Not out of budget (job ${job.id}).`)
  );
}
