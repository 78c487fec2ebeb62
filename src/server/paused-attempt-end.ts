import type { UploadedEvent } from '../protocol/index.js';
import type { JobRow } from '../store/types.js';

/**
 * A runner's `job.events` frame as it is stored (hub.ts), for a job paused for budget (issue 3):
 * the runner reports the end of the paused attempt as it reports any attempt's end, with a
 * `job.finished` (`cancelled`: it stopped the harness for the pause; `failed`: the harness
 * exited on the budget refusal), but the job is not over — a top-up resumes it. Stored as it
 * came, that event was a `job.finished` in the middle of the job's stream, and a client that
 * stops at the first `job.finished` (protocol/events.ts: "the last event of its stream") stopped
 * there (fresh-tester finding, several times). So when `job` (read before the frame is applied)
 * is `paused` at the frame's attempt, a `job.finished` that is not `succeeded` is stored as an
 * `attempt.ended` event with the same rseq, time and fields, plus the attempt number. A
 * `succeeded` one stays: it ends the paused job (frame-move.ts). Any other job or attempt: the
 * frame unchanged.
 *
 * The pause is written before the refusal reaches the harness (budget-pause.ts), so the report
 * of an attempt it ended always finds the job paused. A harness that ended on its own at the
 * same moment may still land as a `job.finished` (the job stays paused: paused-exit.ts reads both).
 * @returns `events`, or a copy with that one event replaced.
 */
export function withPausedAttemptEnd(job: Pick<JobRow, 'status' | 'attempt'> | null, attempt: number, events: readonly UploadedEvent[]): readonly UploadedEvent[] {
  if (!job || job.status !== 'paused' || job.attempt !== attempt) return events;
  const at = events.findIndex((e) => e.type === 'job.finished');
  const fin = events[at];
  if (!fin || fin.type !== 'job.finished' || fin.data.status === 'succeeded') return events;
  const { status, reason, error, sessionId } = fin.data;
  const ended: UploadedEvent = {
    rseq: fin.rseq,
    at: fin.at,
    type: 'attempt.ended',
    data: { attempt, status, ...(reason !== undefined ? { reason } : {}), ...(error !== undefined ? { error } : {}), ...(sessionId !== undefined ? { sessionId } : {}) },
  };
  const out = [...events];
  out[at] = ended;
  return out;
}

/** True when `events` hold a `job.finished` that is not `succeeded`: the frames {@link withPausedAttemptEnd} may change (the hub reads the job only for those). */
export function endsAttemptUnsucceeded(events: readonly UploadedEvent[]): boolean {
  for (const e of events) if (e.type === 'job.finished') return e.data.status !== 'succeeded';
  return false;
}
