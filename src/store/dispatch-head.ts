import { sql } from 'kysely';
import type { Labels } from '../protocol/index.js';
import { num, numOrNull } from './codec.js';
import { assertInt, type StoreCtx } from './ctx.js';
import { PREPARE } from './pg-prepared.js';
import { listHeldRunnerIds, listQueuedForDispatch } from './runners.js';
import type { QueuedJobRef } from './types.js';

/** The head of the queue and the runners on hold, as one dispatch pass first reads them. */
export interface DispatchHead {
  /** Up to `limit` queued jobs in dispatch order (see listQueuedForDispatch). */
  queue: QueuedJobRef[];
  /** Runners held past `now` (epoch ms), ascending. */
  heldRunnerIds: number[];
}

/**
 * The first page of the queue (dispatch order, at most `limit`, 1–5000) and the runners on
 * hold at `now`, read so that a hold committed before a job was created is always seen with
 * that job (the dispatcher's rule: a held runner never gets a queued job). PostgreSQL: one
 * statement, so both come from one snapshot (one round trip instead of two; prepared once per
 * connection, pg-prepared.ts). SQLite (one
 * writer): the queue, then the holds, as two statements (holds read later are fresher), the holds
 * only when the queue is not empty. An empty queue comes with `heldRunnerIds` [] on both.
 * @throws when limit is not 1–5000 or now is not an integer >= 0.
 */
export async function listDispatchHead(c: StoreCtx, limit: number, now: number): Promise<DispatchHead> {
  assertInt('limit', limit, 1);
  if (limit > 5000) throw new Error(`store: limit must be at most 5000, got ${limit}`);
  assertInt('now', now, 0);
  if (c.dialect !== 'postgres') {
    const queue = await listQueuedForDispatch(c, limit);
    return { queue, heldRunnerIds: queue.length ? await listHeldRunnerIds(c, now) : [] };
  }
  // Rows of both kinds in one result: kind 'q' (a queued job) in dispatch order, then kind 'h'
  // (a held runner id, ascending; its priority is null).
  const r = await sql<{ kind: string; id: number; priority: number | null; selector: unknown; pinned_runner_id: number | null; agent: string | null; agent_version: string | null; workspace_job_id: number | null }>`${sql.raw(PREPARE)}
    (select 'q' as kind, id, priority, selector, pinned_runner_id, agent, agent_version, workspace_job_id from jobs
      where status = 'queued' order by priority desc, id asc limit ${limit})
    union all
    (select 'h', id, null, null, null, null, null, null from runners where hold_until > ${now})
    order by kind desc, priority desc, id asc`.execute(c.db);
  const queue: QueuedJobRef[] = [];
  const heldRunnerIds: number[] = [];
  for (const x of r.rows) {
    if (x.kind === 'h') {
      heldRunnerIds.push(num(x.id));
      continue;
    }
    queue.push({
      id: num(x.id),
      priority: num(x.priority),
      selector: c.codec.parse(x.selector) as Labels,
      pinnedRunnerId: numOrNull(x.pinned_runner_id),
      agent: x.agent!,
      agentVersion: x.agent_version!,
      workspaceJobId: numOrNull(x.workspace_job_id),
    });
  }
  return { queue, heldRunnerIds: queue.length ? heldRunnerIds : [] };
}
