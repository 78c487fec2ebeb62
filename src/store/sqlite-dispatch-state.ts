import type BetterSqlite3 from 'better-sqlite3';
import { ACTIVE_STATUSES } from '../core/job-state.js';
import { num, type Codec } from './codec.js';
import { checkDispatchStateArgs, toActiveAssignment, toOwnerLimits, toQueuedRef, toTaskSlot, type ActiveRow, type DispatchState, type OwnerRow, type QueueRow, type SlotRow } from './dispatch-state.js';
import { PAUSED_HOLDING_SQL } from './paused-hold.js';

/**
 * store.listDispatchState on SQLite without Kysely (four queries per dispatch pass; their
 * building was most of a pass's CPU in bench/dispatch, --cpu-prof): the same four reads as
 * dispatch-state.ts (queue head, holds, live assignments, owner limits,
 * kept task slots), prepared once and run synchronously, so from one state of the database.
 * `read` must be called while no transaction is open on the connection (sqlite-fast.ts makes
 * sure: it would otherwise see another caller's uncommitted writes).
 * @throws when limit is not 1–5000 or now is not an integer >= 0 (before reading).
 */
export function sqliteDispatchStateReader(sqlite: BetterSqlite3.Database, codec: Codec): { check(limit: number, now: number): void; read(limit: number, now: number): DispatchState } {
  let s: ReturnType<typeof prepare> | null = null;
  return {
    check: checkDispatchStateArgs,
    read(limit, now) {
      s ??= prepare(sqlite);
      const queue = (s.queue.all(limit) as QueueRow[]).map((x) => toQueuedRef(codec, x));
      const heldRunnerIds = (s.held.all(now) as Array<{ id: number }>).map((x) => num(x.id));
      const active = (s.active.all(...ACTIVE_STATUSES) as ActiveRow[]).map(toActiveAssignment);
      const taskSlots = (s.slots.all(now) as SlotRow[]).map(toTaskSlot);
      const ownerLimits = (s.owners.all() as OwnerRow[]).map(toOwnerLimits);
      return { queue, heldRunnerIds, active, taskSlots, ownerLimits };
    },
  };
}

/** The statements of runners.ts listQueuedForDispatch / listHeldRunnerIds / listActiveAssignments and tasks.ts listTaskSlots. */
function prepare(sqlite: BetterSqlite3.Database) {
  return {
    queue: sqlite.prepare(
      `select id, priority, selector, pinned_runner_id, agent, agent_version, workspace_job_id from jobs where status = 'queued' order by priority desc, id asc limit ?`,
    ),
    // held, or revoked (dispatch-state.ts listTakingNothing)
    held: sqlite.prepare('select id from runners where hold_until > ? or revoked_at is not null order by id'),
    active: sqlite.prepare(
      `select id, runner_id, attempt, status, holds, workspace_job_id from jobs where (status in (${ACTIVE_STATUSES.map(() => '?').join(', ')}) or ${PAUSED_HOLDING_SQL}) and runner_id is not null order by id`,
    ),
    owners: sqlite.prepare('select id, owner_capacity, owner_browser_slots from runners where owner_capacity is not null or owner_browser_slots is not null order by id'),
    slots: sqlite.prepare(
      `select id, runner_id, workspace_job_id, slot_until from tasks where slot_until > ? and status in ('idle', 'running') and runner_id is not null and workspace_job_id is not null order by id`,
    ),
  };
}
