import type { RunningJobReport, ServerToRunner } from '../protocol/index.js';
import type { Store } from '../store/types.js';

/** Most attempts one `job.activity` frame covers (the protocol's limit). */
const MAX_ATTEMPTS = 1000;

/**
 * The `job.activity` frame answering a heartbeat that reports `running` (issue 4: the
 * runner's idle limit counts model calls, which the gateway notes in the store from whichever
 * replica served them): per reported attempt with model calls, the calls in flight and the ms
 * since one last started or ended, on the server clock `now` (epoch ms). Null when nothing is
 * reported (no reply is needed then).
 * @throws whatever the store throws (the hub logs it and answers the frame with `error`).
 */
export async function activityFrame(store: Pick<Store, 'modelCallActivity'>, running: readonly RunningJobReport[], now: number): Promise<Extract<ServerToRunner, { type: 'job.activity' }> | null> {
  if (running.length === 0) return null;
  const rows = await store.modelCallActivity(running.slice(0, MAX_ATTEMPTS));
  return {
    type: 'job.activity',
    jobs: rows.map((r) => ({ jobId: r.jobId, attempt: r.attempt, inFlight: r.inFlight, idleMs: Math.max(0, now - r.lastAt) })),
  };
}
