import type { RunningJobReport, ServerToRunner } from '../protocol/index.js';
import type { Store } from '../store/types.js';

/** Most attempts one `job.activity` frame covers (the protocol's limit). */
const MAX_ATTEMPTS = 1000;

/**
 * The `job.activity` frame answering a heartbeat that reports `running` (issue 4: the
 * runner's idle limit counts model calls, which the gateway notes in the store from whichever
 * replica served them): per reported attempt with model calls, the calls in flight and the ms
 * since one last started or ended, on the server clock `now` (epoch ms). A job with a child
 * that has not ended (queued, running, paused for budget, ...) is waiting on it, not blocked
 * on input: its `inFlight` counts one more and its `idleMs` is 0 (an older runner reads that
 * as a call in flight: the same effect). Without this a parent polling children paused for
 * budget was ended `blocked_on_input` after `idleSeconds`, and its paused children with it
 * (fresh-tester finding). Null when nothing is reported (no reply is needed then).
 * @throws whatever the store throws (the hub logs it and answers the frame with `error`).
 */
export async function activityFrame(store: Pick<Store, 'modelCallActivity' | 'listJobsWithLiveChildren'>, running: readonly RunningJobReport[], now: number): Promise<Extract<ServerToRunner, { type: 'job.activity' }> | null> {
  if (running.length === 0) return null;
  const reported = running.slice(0, MAX_ATTEMPTS);
  const [rows, waiting] = await Promise.all([store.modelCallActivity(reported), store.listJobsWithLiveChildren([...new Set(reported.map((r) => r.jobId))])]);
  const parents = new Set(waiting);
  const jobs = rows.map((r) => {
    const waits = parents.has(r.jobId);
    return { jobId: r.jobId, attempt: r.attempt, inFlight: r.inFlight + (waits ? 1 : 0), idleMs: waits ? 0 : Math.max(0, now - r.lastAt) };
  });
  // a waiting parent that made no model call of its own this attempt
  const listed = new Set(rows.map((r) => `${r.jobId}:${r.attempt}`));
  for (const r of reported) if (parents.has(r.jobId) && !listed.has(`${r.jobId}:${r.attempt}`)) jobs.push({ jobId: r.jobId, attempt: r.attempt, inFlight: 1, idleMs: 0 });
  return { type: 'job.activity', jobs };
}
