import { sql } from 'kysely';
import type { Labels } from '../protocol/index.js';
import { ACTIVE_STATUSES } from '../core/job-state.js';
import { parseHolds } from '../core/capacity.js';
import { num, numOrNull } from './codec.js';
import { assertInt, type StoreCtx } from './ctx.js';
import { listDispatchHead, type DispatchHead } from './dispatch-head.js';
import { PREPARE } from './pg-prepared.js';
import { listActiveAssignments } from './runners.js';
import { listTaskSlots } from './tasks.js';
import type { TaskSlot } from './tasks-types.js';
import type { ActiveAssignment, QueuedJobRef } from './types.js';

/** What a dispatch pass reads first: the head of the queue with the holds, every live assignment, the idle tasks' kept slots. */
export interface DispatchState extends DispatchHead {
  /** As listActiveAssignments: every assigned/running job with its runner, by job id. */
  active: ActiveAssignment[];
  /** As listTaskSlots(now): runner slots kept by idle tasks, by task id. */
  taskSlots: TaskSlot[];
}

/**
 * listDispatchHead(limit, now) + listActiveAssignments() + listTaskSlots(now) — the reads a
 * dispatch pass starts with (server/dispatcher.ts) — with the same results.
 * - PostgreSQL: ONE statement (one round trip and one socket write instead of three, issue 5:
 *   the writes to the database were most of the server thread's time per job, --cpu-prof), so
 *   all four come from one snapshot; prepared once per connection (pg-prepared.ts).
 * - SQLite (one writer): the three reads in turn (no round trips to save).
 * @throws when limit is not 1–5000 or now is not an integer >= 0.
 */
export async function listDispatchState(c: StoreCtx, limit: number, now: number): Promise<DispatchState> {
  assertInt('limit', limit, 1);
  if (limit > 5000) throw new Error(`store: limit must be at most 5000, got ${limit}`);
  assertInt('now', now, 0);
  if (c.dialect !== 'postgres') {
    const head = await listDispatchHead(c, limit, now);
    return { ...head, active: await listActiveAssignments(c), taskSlots: await listTaskSlots(c, now) };
  }
  // Rows of four kinds in one result, each kind in its own order: 't' (a kept task slot, by
  // task id), 'q' (a queued job, dispatch order), 'h' (a held runner id, ascending), 'a' (a live
  // assignment, by job id). Priority is null except for 'q'.
  type Row = {
    kind: string;
    id: number;
    priority: number | null;
    selector: unknown;
    pinned_runner_id: number | null;
    agent: string | null;
    agent_version: string | null;
    workspace_job_id: number | null;
    runner_id: number | null;
    attempt: number | null;
    status: string | null;
    holds: string | null;
    until: number | null;
  };
  const r = await sql<Row>`${sql.raw(PREPARE)}
    (select 'q' as kind, id, priority, selector, pinned_runner_id, agent, agent_version, workspace_job_id,
        null::int as runner_id, null::int as attempt, null::text as status, null::text as holds, null::bigint as until
      from jobs where status = 'queued' order by priority desc, id asc limit ${limit})
    union all
    (select 'h', id, null, null, null, null, null, null, null, null, null, null, null from runners where hold_until > ${now})
    union all
    (select 'a', id, null, null, null, null, null, workspace_job_id, runner_id, attempt, status, holds, null
      from jobs where status = any(${[...ACTIVE_STATUSES]}::text[]) and runner_id is not null)
    union all
    (select 't', id, null, null, null, null, null, workspace_job_id, runner_id, null, null, null, slot_until
      from tasks where slot_until > ${now} and status in ('idle', 'running') and runner_id is not null and workspace_job_id is not null)
    order by kind desc, priority desc, id asc`.execute(c.db);
  const queue: QueuedJobRef[] = [];
  const heldRunnerIds: number[] = [];
  const active: ActiveAssignment[] = [];
  const taskSlots: TaskSlot[] = [];
  for (const x of r.rows) {
    if (x.kind === 'q') {
      queue.push({
        id: num(x.id),
        priority: num(x.priority),
        selector: c.codec.parse(x.selector) as Labels,
        pinnedRunnerId: numOrNull(x.pinned_runner_id),
        agent: x.agent!,
        agentVersion: x.agent_version!,
        workspaceJobId: numOrNull(x.workspace_job_id),
      });
    } else if (x.kind === 'h') {
      heldRunnerIds.push(num(x.id));
    } else if (x.kind === 'a') {
      const id = num(x.id);
      active.push({ jobId: id, runnerId: num(x.runner_id), attempt: num(x.attempt), status: x.status as ActiveAssignment['status'], holds: parseHolds(x.holds), workspace: numOrNull(x.workspace_job_id) ?? id });
    } else {
      taskSlots.push({ taskId: num(x.id), runnerId: num(x.runner_id), workspace: num(x.workspace_job_id), until: num(x.until) });
    }
  }
  // As listDispatchHead: an empty queue comes with no holds.
  return { queue, heldRunnerIds: queue.length ? heldRunnerIds : [], active, taskSlots };
}
