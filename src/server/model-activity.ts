import type { RunningJobReport, ServerToRunner } from '../protocol/index.js';
import type { Store } from '../store/types.js';

/** Most attempts one `job.activity` frame covers (the protocol's limit). */
const MAX_ATTEMPTS = 1000;

/**
 * The `job.activity` frame answering a heartbeat that reports `running` (issue 4: the
 * runner's idle limit counts model calls, which the gateway notes in the store from whichever
 * replica served them): per reported attempt, the calls in flight and the ms since one last
 * started or ended, on the server clock `now` (epoch ms). A job waiting on its children is not
 * blocked on input: while one has not ended (queued, running, paused for budget, ...) its
 * `inFlight` counts one more and its `idleMs` is 0 (an older runner reads that as a call in
 * flight: the same effect); once none lives, its idle time counts from when the last one ended
 * (if that is later than its last model call). Without this a parent polling children paused
 * for budget was ended `blocked_on_input` after `idleSeconds`, its paused children with it, and
 * a parent polling a running child 0–2 s after the child finished (fresh-tester findings).
 * Attempts with neither model calls nor children are left out. Null when nothing is reported
 * (no reply is needed then).
 * @throws whatever the store throws (the hub logs it and answers the frame with `error`).
 */
export async function activityFrame(store: Pick<Store, 'modelCallActivity' | 'childActivity'>, running: readonly RunningJobReport[], now: number): Promise<Extract<ServerToRunner, { type: 'job.activity' }> | null> {
  if (running.length === 0) return null;
  const reported = running.slice(0, MAX_ATTEMPTS);
  const [rows, kids] = await Promise.all([store.modelCallActivity(reported), store.childActivity([...new Set(reported.map((r) => r.jobId))])]);
  const children = new Map(kids.map((k) => [k.jobId, k]));
  const byAttempt = new Map(rows.map((r) => [`${r.jobId}:${r.attempt}`, r]));
  const jobs: Array<{ jobId: number; attempt: number; inFlight: number; idleMs: number }> = [];
  for (const { jobId, attempt } of reported) {
    const calls = byAttempt.get(`${jobId}:${attempt}`);
    const kid = children.get(jobId);
    if (calls === undefined && kid === undefined) continue;
    const inFlight = (calls?.inFlight ?? 0) + (kid !== undefined && kid.liveChildren > 0 ? 1 : 0);
    const lastAt = Math.max(calls?.lastAt ?? 0, kid?.lastChildEndedAt ?? 0);
    jobs.push({ jobId, attempt, inFlight, idleMs: kid !== undefined && kid.liveChildren > 0 ? 0 : Math.max(0, now - lastAt) });
  }
  return { type: 'job.activity', jobs };
}
