import type { JobEvent } from '../protocol/index.js';
import { toJobEvent } from './codec.js';
import { assertInt, type StoreCtx } from './ctx.js';

/** Pages of a job's events read from the end, and the messages of several jobs (issue 8: the job page, the task conversation). */

/** At most `limit` (1..5,000) events with seq < `beforeSeq` (null: the newest), ascending. */
export async function listEventsBefore(c: StoreCtx, jobId: number, beforeSeq: number | null, limit: number): Promise<JobEvent[]> {
  assertInt('limit', limit, 1);
  if (limit > 5_000) throw new Error(`store: limit must be at most 5000, got ${limit}`);
  let q = c.db.selectFrom('job_events').select(['job_id', 'seq', 'type', 'data', 'at']).where('job_id', '=', jobId);
  if (beforeSeq !== null) {
    assertInt('beforeSeq', beforeSeq, 1);
    q = q.where('seq', '<', beforeSeq);
  }
  const rows = await q.orderBy('seq', 'desc').limit(limit).execute();
  return rows.reverse().map((r) => toJobEvent(c.codec, r));
}

/** `message` events of these jobs (≤ 200 ids), ordered by job id then seq; at most `limit` (1..5,000). */
export async function listJobMessages(c: StoreCtx, jobIds: readonly number[], limit: number): Promise<JobEvent[]> {
  assertInt('limit', limit, 1);
  if (limit > 5_000) throw new Error(`store: limit must be at most 5000, got ${limit}`);
  if (jobIds.length > 200) throw new Error(`store: at most 200 job ids, got ${jobIds.length}`);
  for (const id of jobIds) assertInt('jobId', id, 1);
  if (jobIds.length === 0) return [];
  const rows = await c.db
    .selectFrom('job_events')
    .select(['job_id', 'seq', 'type', 'data', 'at'])
    .where('job_id', 'in', [...new Set(jobIds)])
    .where('type', '=', 'message')
    .orderBy('job_id')
    .orderBy('seq')
    .limit(limit)
    .execute();
  return rows.map((r) => toJobEvent(c.codec, r));
}
