import { CompiledQuery } from 'kysely';
import type { Labels } from '../protocol/index.js';
import { ACTIVE_STATUSES } from '../core/job-state.js';
import { parseHolds } from '../core/capacity.js';
import { num, numOrNull, type Codec } from './codec.js';
import { assertInt, type StoreCtx } from './ctx.js';
import type { DispatchHead } from './dispatch-head.js';
import { PREPARE } from './pg-prepared.js';
import { listActiveAssignments, listQueuedForDispatch } from './runners.js';
import { listTaskSlots } from './tasks.js';
import type { TaskSlot } from './tasks-types.js';
import type { ActiveAssignment, QueuedJobRef } from './types.js';
import { PAUSED_HOLDING_SQL } from './paused-hold.js';

/** A runner's owner setting (0009 `owner_capacity`, `owner_browser_slots`; null: the runner's own offer). */
export interface OwnerLimits {
  runnerId: number;
  capacity: number | null;
  browserSlots: number | null;
}

/** What a dispatch pass reads first: the head of the queue with the holds, every live assignment, the idle tasks' kept slots, the owners' capacity settings. */
export interface DispatchState extends DispatchHead {
  /** As listActiveAssignments: every assigned/running job with its runner, by job id. */
  active: ActiveAssignment[];
  /** As listTaskSlots(now): runner slots kept by idle tasks, by task id. */
  taskSlots: TaskSlot[];
  /**
   * Every runner with an owner capacity setting, by runner id: a setting made through another
   * replica reaches the runner's connection here with the next pass (server/hub.ts applyOwnerLimits).
   */
  ownerLimits: OwnerLimits[];
}

/**
 * The reads a dispatch pass starts with (server/dispatcher.ts): the first page of the queue
 * (dispatch order, at most `limit`) with the runners held at `now` (a hold committed before a job
 * was created is always seen with that job), + listActiveAssignments() + listTaskSlots(now) + the
 * owners' capacity settings.
 * - PostgreSQL: ONE statement (one round trip and one socket write instead of three, issue 5:
 *   the writes to the database were most of the server thread's time per job, --cpu-prof), so
 *   all four come from one snapshot; prepared once per connection (pg-prepared.ts).
 * - SQLite (one writer): the three reads in turn (no round trips to save).
 * @throws when limit is not 1–5000 or now is not an integer >= 0.
 */
export async function listDispatchState(c: StoreCtx, limit: number, now: number): Promise<DispatchState> {
  checkDispatchStateArgs(limit, now);
  if (c.dialect !== 'postgres') {
    // One writer: the queue, then the holds (read later, so fresher).
    const queue = await listQueuedForDispatch(c, limit);
    const heldRunnerIds = await listTakingNothing(c, now);
    const owners = await c.db.selectFrom('runners').select(['id', 'owner_capacity', 'owner_browser_slots']).where((eb) => eb.or([eb('owner_capacity', 'is not', null), eb('owner_browser_slots', 'is not', null)])).orderBy('id').execute();
    return { queue, heldRunnerIds, active: await listActiveAssignments(c), taskSlots: await listTaskSlots(c, now), ownerLimits: owners.map(toOwnerLimits) };
  }
  // Rows of five kinds in one result, each kind in its own order: 't' (a kept task slot, by
  // task id), 'q' (a queued job, dispatch order), 'o' (a runner's owner limits, by runner id:
  // owner_capacity in runner_id, owner_browser_slots in attempt), 'h' (a held runner id,
  // ascending), 'a' (a live assignment, by job id). Priority is null except for 'q'.
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
    slot_until: number | null;
  };
  const r = await c.db.executeQuery<Row>(CompiledQuery.raw(DISPATCH_STATE, [limit, now, ACTIVE]));
  const queue: QueuedJobRef[] = [];
  const heldRunnerIds: number[] = [];
  const active: ActiveAssignment[] = [];
  const taskSlots: TaskSlot[] = [];
  const ownerLimits: OwnerLimits[] = [];
  for (const x of r.rows) {
    if (x.kind === 'q') queue.push(toQueuedRef(c.codec, x as QueueRow));
    else if (x.kind === 'h') heldRunnerIds.push(num(x.id));
    else if (x.kind === 'a') active.push(toActiveAssignment(x as ActiveRow));
    else if (x.kind === 'o') ownerLimits.push(toOwnerLimits({ id: x.id, owner_capacity: x.runner_id, owner_browser_slots: x.attempt }));
    else taskSlots.push(toTaskSlot(x as SlotRow));
  }
  return { queue, heldRunnerIds, active, taskSlots, ownerLimits };
}

/**
 * Ids of the runners a dispatch pass gives no queued job (ascending): held past `now`, or
 * revoked. A revoked runner's socket on another replica lives on until that replica notices
 * (server/sweeper.ts); meanwhile its requeued job must not go back to it (a fresh user's
 * two-replica revoke: the job ran again on the revoked runner).
 */
async function listTakingNothing(c: StoreCtx, now: number): Promise<number[]> {
  const rows = await c.db.selectFrom('runners').select('id').where((eb) => eb.or([eb('hold_until', '>', now), eb('revoked_at', 'is not', null)])).orderBy('id').execute();
  return rows.map((r) => num(r.id));
}

/** The live statuses, as the statement's array parameter. */
const ACTIVE = [...ACTIVE_STATUSES];

/**
 * The PostgreSQL statement of {@link listDispatchState}, fixed: built once, not by Kysely per
 * pass (bench/dispatch). $1 the queue page's limit, $2 now (epoch ms), $3 the live statuses.
 */
const DISPATCH_STATE = `${PREPARE}
    (select 'q' as kind, id, priority, selector, pinned_runner_id, agent, agent_version, workspace_job_id,
        null::int as runner_id, null::int as attempt, null::text as status, null::text as holds, null::bigint as slot_until
      from jobs where status = 'queued' order by priority desc, id asc limit $1)
    union all
    (select 'h', id, null, null, null, null, null, null, null, null, null, null, null from runners where hold_until > $2 or revoked_at is not null)
    union all
    (select 'a', id, null, null, null, null, null, workspace_job_id, runner_id, attempt, status, holds, null
      from jobs where (status = any($3::text[]) or ${PAUSED_HOLDING_SQL}) and runner_id is not null)
    union all
    (select 'o', id, null, null, null, null, null, null, owner_capacity, owner_browser_slots, null, null, null
      from runners where owner_capacity is not null or owner_browser_slots is not null)
    union all
    (select 't', id, null, null, null, null, null, workspace_job_id, runner_id, null, null, null, slot_until
      from tasks where slot_until > $2 and status in ('idle', 'running') and runner_id is not null and workspace_job_id is not null)
    order by kind desc, priority desc, id asc`;

/** @throws when limit is not 1–5000 or now is not an integer >= 0 (both engines' listDispatchState). */
export function checkDispatchStateArgs(limit: number, now: number): void {
  assertInt('limit', limit, 1);
  if (limit > 5000) throw new Error(`store: limit must be at most 5000, got ${limit}`);
  assertInt('now', now, 0);
}

/** A `jobs` row of the queue read. */
export type QueueRow = { id: number; priority: number | null; selector: unknown; pinned_runner_id: number | null; agent: string | null; agent_version: string | null; workspace_job_id: number | null };
/** A `jobs` row of the live-assignments read. */
export type ActiveRow = { id: number; runner_id: number | null; attempt: number | null; status: string | null; holds: string | null; workspace_job_id: number | null };
/** A `tasks` row of the kept-slots read. */
export type SlotRow = { id: number; runner_id: number; workspace_job_id: number; slot_until: number };

/** A queued job as the dispatcher matches it. */
export function toQueuedRef(codec: Codec, x: QueueRow): QueuedJobRef {
  return {
    id: num(x.id),
    priority: num(x.priority),
    selector: codec.parse(x.selector) as Labels,
    pinnedRunnerId: numOrNull(x.pinned_runner_id),
    agent: x.agent!,
    agentVersion: x.agent_version!,
    workspaceJobId: numOrNull(x.workspace_job_id),
  };
}

/** A live assignment; its workspace is its own job's unless it shares another's. */
export function toActiveAssignment(r: ActiveRow): ActiveAssignment {
  const id = num(r.id);
  return { jobId: id, runnerId: num(r.runner_id), attempt: num(r.attempt), status: r.status as ActiveAssignment['status'], holds: parseHolds(r.holds), workspace: numOrNull(r.workspace_job_id) ?? id };
}

/** A `runners` row of the owner-limits read. */
export type OwnerRow = { id: number; owner_capacity: number | null; owner_browser_slots: number | null };

/** A runner's owner limits. */
export function toOwnerLimits(r: OwnerRow): OwnerLimits {
  return { runnerId: num(r.id), capacity: numOrNull(r.owner_capacity), browserSlots: numOrNull(r.owner_browser_slots) };
}

/** A runner slot kept by an idle task. */
export function toTaskSlot(r: SlotRow): TaskSlot {
  return { taskId: num(r.id), runnerId: num(r.runner_id), workspace: num(r.workspace_job_id), until: num(r.slot_until) };
}
