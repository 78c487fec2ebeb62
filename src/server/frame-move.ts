import type { UploadedEvent } from '../protocol/index.js';
import type { FrameMove } from '../store/dispatch-types.js';
import { withChildResults } from './tree-result.js';

/**
 * The status change a runner's `job.events` frame carries, for store.applyRunnerFrame (`now`
 * epoch ms, the server's clock):
 * - a `job.finished` (the first one counts) ends the job from assigned, running or cancelling
 *   (a `succeeded` one also from paused) at its status, with its reason (default: none for succeeded, `cancelled`, else `error`),
 *   error, session id (else the frame's `harness.started` one) and result plus its children's
 *   results (issue 6); a `harness.started` in the same frame sets started_at unless set — one
 *   write for a job that starts and ends in one frame;
 * - else a `harness.started` moves it from assigned to running, started_at = now, with its
 *   session id;
 * - else undefined (events only).
 */
export function frameMove(events: readonly UploadedEvent[], now: number): FrameMove | undefined {
  let started: Extract<UploadedEvent, { type: 'harness.started' }> | undefined;
  let finished: Extract<UploadedEvent, { type: 'job.finished' }> | undefined;
  for (const e of events) {
    if (e.type === 'harness.started') started ??= e;
    else if (e.type === 'job.finished') finished ??= e;
  }
  if (finished) {
    const d = finished.data;
    const sessionId = d.sessionId ?? started?.data.sessionId;
    return {
      // A success also ends a budget-paused job (its process finished the work before the pause's
      // stop landed; server/paused-exit.ts); any other ending leaves it paused for the top-up.
      from: d.status === 'succeeded' ? ['assigned', 'running', 'cancelling', 'paused'] : ['assigned', 'running', 'cancelling'],
      to: d.status,
      endReason: d.reason ?? (d.status === 'succeeded' ? null : d.status === 'cancelled' ? 'cancelled' : 'error'),
      error: d.error ?? null,
      result: d.result ?? null,
      withChildren: withChildResults,
      ...(sessionId ? { sessionId } : {}),
      ...(started ? { startedAtIfUnset: now } : {}),
    };
  }
  // startedAt is the job's first start: a resumed or retried attempt keeps it (the job page's
  // Started and Duration showed the last attempt's alone, fresh-tester finding)
  if (started) return { from: ['assigned'], to: 'running', startedAtIfUnset: now, ...(started.data.sessionId ? { sessionId: started.data.sessionId } : {}) };
  return undefined;
}
