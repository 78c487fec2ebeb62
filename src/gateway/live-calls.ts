import type { CallSignal } from './reply.js';

/**
 * The model calls this process is serving, by job, so that a job that is cancelled (or whose
 * attempt is lost or fenced) stops spending at once: its token is dead from the cancel on, but a
 * call already admitted would otherwise run (and bill) until its upstream ended.
 *
 * A call is tracked from its budget reservation to its settle (budget.ts): a Map set and delete
 * per call (~50 ns of CPU), no timer and no AbortController on the success path (bench/gateway-cpu.bench.js).
 * Aborting a call aborts its request's {@link CallSignal} as the client going away does
 * (node-adapter.ts's own signal, or the web adapter's, given an `abort` by gateway.ts): the
 * upstream request is aborted (upstream-http.ts), a live stream stops being read and the client's
 * stream ends, and the call is settled by meter.ts with the usage seen so far, or the estimate,
 * marked as one (never $0).
 */

/** Why the gateway itself cut a call ({@link cutReason}): its job's attempt ended, or the server is stopping. */
export type CutReason = 'job_ended' | 'shutting_down';

// The signals this module aborted, with why: a call whose signal aborted without an entry here
// was ended by its client going away.
const cuts = new WeakMap<object, CutReason>();

/** Why the gateway cut the call of `signal` (live-calls.ts aborted it), or undefined: not cut by the gateway (its client went away, or it was not aborted). */
export function cutReason(signal: CallSignal): CutReason | undefined {
  return cuts.get(signal);
}

/** One tracked call: the store it reserved in (a job id means a job of that store), its job's attempt and its signal. */
export interface LiveCall {
  readonly store: object;
  readonly attempt: number;
  readonly signal: CallSignal & { abort(): void };
}

// A job's one call kept as is (the common case: no Set made and dropped on every call), more in a Set.
const byJob = new Map<number, LiveCall | Set<LiveCall>>();

/**
 * Tracks a call of attempt `attempt` of job `jobId` (reserved in `store`) until {@link untrackCall}.
 * Null (nothing tracked) when its signal cannot be aborted from here (a plain AbortSignal).
 */
export function trackCall(store: object, jobId: number, attempt: number, signal: CallSignal | undefined): LiveCall | null {
  if (signal === undefined || typeof signal.abort !== 'function') return null;
  const call: LiveCall = { store, attempt, signal: signal as LiveCall['signal'] };
  const had = byJob.get(jobId);
  if (had === undefined) byJob.set(jobId, call);
  else if (had instanceof Set) had.add(call);
  else byJob.set(jobId, new Set([had, call]));
  return call;
}

/** Stops tracking `call` (its call settled). */
export function untrackCall(jobId: number, call: LiveCall): void {
  const had = byJob.get(jobId);
  if (had === call) byJob.delete(jobId);
  else if (had instanceof Set) {
    had.delete(call);
    if (had.size === 0) byJob.delete(jobId);
  }
}

/**
 * Aborts every live call of job `jobId` in `store` (see the module comment) — only those of
 * attempts before `beforeAttempt` when it is given (a newer attempt runs: the older one is
 * fenced); each settles on its own as its reply ends (meter.ts), and one not answered yet tells
 * its client `why` ({@link cutReason}, upstream-failure.ts). @returns how many were aborted.
 */
export function abortJobCalls(store: object, jobId: number, why: CutReason = 'job_ended', beforeAttempt?: number): number {
  const had = byJob.get(jobId);
  if (had === undefined) return 0;
  let n = 0;
  for (const call of had instanceof Set ? [...had] : [had]) {
    if (call.store !== store || (beforeAttempt !== undefined && call.attempt >= beforeAttempt)) continue;
    untrackCall(jobId, call);
    if (call.signal.aborted) {
      // its client left first: a non-streamed call still upstream (upstream-signal.ts) stops now
      if (!cuts.has(call.signal) && cutListeners.has(call.signal)) {
        cuts.set(call.signal, why);
        notifyCut(call.signal);
        n += 1;
      }
      continue;
    }
    n += 1;
    cuts.set(call.signal, why);
    notifyCut(call.signal);
    call.signal.abort();
  }
  return n;
}

// Who waits for the gateway to cut a signal's call (onCut), whether or not its client is gone.
const cutListeners = new WeakMap<object, Array<() => void>>();

/**
 * Calls `listener` once when the gateway cuts the call of `signal` (abortJobCalls: its job's
 * attempt ended, the server stops) — also after its client went away, when aborting the signal
 * itself does nothing more (upstream-signal.ts: a non-streamed call read to its end).
 */
export function onCut(signal: CallSignal, listener: () => void): void {
  const l = cutListeners.get(signal);
  if (l) l.push(listener);
  else cutListeners.set(signal, [listener]);
}

function notifyCut(signal: object): void {
  const l = cutListeners.get(signal);
  if (!l) return;
  cutListeners.delete(signal);
  for (const fn of l) fn();
}

/**
 * Aborts every live call reserved in `store`, whatever its job (a stopping server's calls still
 * running after its grace period, gateway.ts drain); each settles on its own as its reply ends.
 * @returns how many were aborted.
 */
export function abortStoreCalls(store: object): number {
  let n = 0;
  for (const jobId of [...byJob.keys()]) n += abortJobCalls(store, jobId, 'shutting_down');
  return n;
}

/**
 * The jobs of `store` with live calls here, each with the attempts those calls belong to: what
 * server/live-call-fence.ts checks against the store, for jobs ended through another replica.
 */
export function liveCallJobs(store: object): Map<number, Set<number>> {
  const out = new Map<number, Set<number>>();
  for (const [jobId, had] of byJob) {
    for (const call of had instanceof Set ? had : [had]) {
      if (call.store !== store) continue;
      const attempts = out.get(jobId);
      if (attempts) attempts.add(call.attempt);
      else out.set(jobId, new Set([call.attempt]));
    }
  }
  return out;
}

/** How many calls of job `jobId` are tracked (tests, diagnostics). */
export function liveCallCount(jobId: number): number {
  const had = byJob.get(jobId);
  return had === undefined ? 0 : had instanceof Set ? had.size : 1;
}
