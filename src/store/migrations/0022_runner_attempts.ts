import { sql, type Kysely, type Migration } from 'kysely';
import type { SqlDialect } from '../schema.js';

/**
 * 0022 (fleet faults: a runner's recent jobs, a requeued job's runner):
 * - index `job_events_runner_status`: the server's `status` events by the runner they concern
 *   (`data.runnerId`), then job and seq. A runner's recent jobs are read per attempt from
 *   them (store/runner-attempts.ts: its `assigned` events and how each attempt ended), so a
 *   job lost on a runner and finished on another shows on both; only status events are in it
 *   (partial: `type = 'status' and rseq is null`), a few per job.
 * - a job back in the queue is on no runner: `runner_id` of queued jobs is cleared (lost
 *   attempts' retries and budget resumes kept it until the next claim).
 */
export function runnerAttempts(dialect: SqlDialect): Migration {
  return {
    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations are untyped by design (Kysely docs)
    async up(db: Kysely<any>) {
      if (dialect === 'postgres') {
        await sql`create index job_events_runner_status on job_events ((data->>'runnerId'), job_id, seq) where type = 'status' and rseq is null`.execute(db);
      } else {
        await sql`create index job_events_runner_status on job_events (json_extract(data, '$.runnerId'), job_id, seq) where type = 'status' and rseq is null`.execute(db);
      }
      await sql`update jobs set runner_id = null where status = 'queued' and runner_id is not null`.execute(db);
    },
    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- as above
    async down(db: Kysely<any>) {
      await sql`drop index if exists job_events_runner_status`.execute(db);
    },
  };
}
