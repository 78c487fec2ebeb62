import type { RunnerActivityEntry } from '../protocol/index.js';
import type { RunnerEventRow } from '../store/dashboard-types.js';
import type { RunnerAttemptRow } from '../store/runner-attempts.js';
import type { RunnerRow } from '../store/types.js';
import { iso } from './views.js';

/**
 * A runner's activity, newest first, at most `limit` lines (issue 8, runner page): its
 * registration; what the server recorded as it happened (`events`: connected, disconnected,
 * offline, held, extended, resumed, capacity, revoked); and one start and end per attempt that
 * ran on it (`attempts`, store listRecentAttemptsForRunner: also those lost there and retried on
 * another runner, which the job rows, naming only the current runner, do not show); a current
 * attempt the runner has not started yet (`assigned`) reads `job.assigned`, not started. The current
 * attempt's end says the job's status, reason and result summary; an earlier one's says how it
 * ended there (its outcome) and where the job is now. Equal times keep the recorded order.
 */
export function runnerActivityOf(runner: RunnerRow, events: readonly RunnerEventRow[], attempts: readonly RunnerAttemptRow[], limit: number): RunnerActivityEntry[] {
  const out: Array<{ at: number; order: number; entry: RunnerActivityEntry }> = [];
  const push = (at: number, order: number, kind: string, text: string, jobId: number | null) => out.push({ at, order, entry: { at: iso(at), kind, text, jobId } });
  push(runner.createdAt, 0, 'registered', `registered as ${runner.name}`, null);
  for (const e of events) push(e.at, 1 + e.id, e.kind, e.text, e.jobId);
  for (const a of attempts) {
    const j = a.job;
    const which = a.attempt > 1 ? ` (attempt ${a.attempt})` : '';
    // the job's startedAt is its first attempt's (frame-move.ts): a later attempt's own start is its assignment
    const started = a.current && a.attempt === 1 ? (j.startedAt ?? j.assignedAt ?? a.assignedAt) : a.assignedAt;
    // a current attempt still `assigned` has not started: the runner never said so (a frozen
    // runner's job read "started" though it never ran, fresh tester)
    if (a.current && j.status === 'assigned') push(a.assignedAt ?? started ?? runner.createdAt, 1, 'job.assigned', `job #${j.id} ${j.agent} assigned${which}, not started yet`, j.id);
    else if (started !== null) push(started, 1, 'job.started', `job #${j.id} ${j.agent} started${which}`, j.id);
    if (a.endedAt === null) continue;
    if (a.current) {
      const why = [j.endReason && j.endReason !== j.status ? j.endReason : null, j.error, j.result?.summary].filter((x): x is string => !!x).join(' — ');
      push(a.endedAt, 2, 'job.ended', `job #${j.id} ${j.agent}${which} ended ${j.status}${why ? `: ${why.slice(0, 300)}` : ''}`, j.id);
    } else {
      push(a.endedAt, 2, 'job.ended', `job #${j.id} ${j.agent}${which} ended ${a.outcome} on this runner; the job is now ${j.status}${j.attempt !== a.attempt ? `, at attempt ${j.attempt}` : ''}`, j.id);
    }
  }
  return out
    .sort((a, b) => b.at - a.at || b.order - a.order)
    .slice(0, limit)
    .map((x) => x.entry);
}
