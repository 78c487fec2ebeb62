import type { RunnerActivityEntry } from '../protocol/index.js';
import type { RunnerEventRow } from '../store/dashboard-types.js';
import type { JobRow, RunnerRow } from '../store/types.js';
import { iso } from './views.js';

/**
 * A runner's activity, newest first, at most `limit` lines (issue 8, runner page): its
 * registration; what the server recorded as it happened (`events`: connected, disconnected,
 * offline, held, extended, resumed, capacity, revoked); and from its job rows, each job's
 * start (`startedAt`, else `assignedAt`) and end (`finishedAt`, with status, reason and the
 * result's summary). Equal times keep the recorded order (a job ends after it starts).
 */
export function runnerActivityOf(runner: RunnerRow, events: readonly RunnerEventRow[], jobs: readonly JobRow[], limit: number): RunnerActivityEntry[] {
  const out: Array<{ at: number; order: number; entry: RunnerActivityEntry }> = [];
  const push = (at: number, order: number, kind: string, text: string, jobId: number | null) => out.push({ at, order, entry: { at: iso(at), kind, text, jobId } });
  push(runner.createdAt, 0, 'registered', `registered as ${runner.name}`, null);
  for (const e of events) push(e.at, 1 + e.id, e.kind, e.text, e.jobId);
  for (const j of jobs) {
    const started = j.startedAt ?? j.assignedAt;
    if (started !== null) push(started, 1, 'job.started', `job #${j.id} ${j.agent} started${j.attempt > 1 ? ` (attempt ${j.attempt})` : ''}`, j.id);
    if (j.finishedAt !== null) {
      const why = [j.endReason && j.endReason !== j.status ? j.endReason : null, j.error, j.result?.summary].filter((x): x is string => !!x).join(' — ');
      push(j.finishedAt, 2, 'job.ended', `job #${j.id} ${j.agent} ended ${j.status}${why ? `: ${why.slice(0, 300)}` : ''}`, j.id);
    }
  }
  return out
    .sort((a, b) => b.at - a.at || b.order - a.order)
    .slice(0, limit)
    .map((x) => x.entry);
}
