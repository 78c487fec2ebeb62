import type BetterSqlite3 from 'better-sqlite3';
import { toJobEvent, toJobRow, type Codec } from './codec.js';
import type { ClaimedJob, ClaimRequest } from './claim-batch.js';
import { runnerTakesJobsSql } from './claim-runner.js';

/**
 * store.claimJobsById on SQLite without Kysely (its query building and the transaction's
 * async hops were a third of the server's CPU per dispatched job in bench/dispatch,
 * --cpu-prof): the statements of claim-batch.ts's SQLite path — per claim, the conditional
 * UPDATE (still queued, selector ⊆ the runner's labels tested in SQL, not pinned elsewhere,
 * the runner neither revoked nor offline: claim-runner.ts)
 * and the event INSERT with the job's next seq — prepared once and run synchronously inside
 * `sqlite.transaction`, so a unit of sqlite-group-commit.ts (a SAVEPOINT inside the group's
 * transaction). `claims` are checked by the caller (claim-batch.ts checkClaims); `at` is
 * `now` as ISO-8601 (the event's time). Returns the claims that took, in `claims` order.
 * One writer per data folder (open.ts lock): the UPDATE's WHERE is the whole claim check.
 */
export function sqliteClaimApplier(sqlite: BetterSqlite3.Database, codec: Codec): (claims: readonly ClaimRequest[], now: number, at: string) => ClaimedJob[] {
  let s: ReturnType<typeof prepare> | null = null;
  return sqlite.transaction((claims: readonly ClaimRequest[], now: number, at: string): ClaimedJob[] => {
    s ??= prepare(sqlite);
    const out: ClaimedJob[] = [];
    for (const q of claims) {
      const row = s.claim.get({ runnerId: q.runner.id, now, tokenHash: q.tokenHash, holds: q.holds, jobId: q.jobId, labels: codec.json(q.runner.labels) }) as Parameters<typeof toJobRow>[1] | undefined;
      if (!row) continue;
      const job = toJobRow(codec, row);
      const ev = s.event.get({ jobId: job.id, attempt: job.attempt, type: q.event.type, data: codec.json(q.event.data), at }) as Parameters<typeof toJobEvent>[1];
      out.push({ job, event: toJobEvent(codec, ev) });
    }
    return out;
  });
}

/** The fixed statements (after the migrations made the tables). */
function prepare(sqlite: BetterSqlite3.Database) {
  return {
    claim: sqlite.prepare(
      `update jobs set status = 'assigned', runner_id = @runnerId, assigned_at = @now, token_hash = @tokenHash, holds = @holds, attempt = attempt + 1
      where id = @jobId and status = 'queued' and (pinned_runner_id is null or pinned_runner_id = @runnerId)
        and not exists (select 1 from json_each(jobs.selector) as s where s.value is not json_extract(@labels, '$.' || json_quote(s.key)))
        and ${runnerTakesJobsSql('@runnerId')}
      returning *`,
    ),
    event: sqlite.prepare(
      `insert into job_events (job_id, seq, attempt, rseq, type, data, at)
      select @jobId, coalesce((select max(seq) from job_events where job_id = @jobId), 0) + 1, @attempt, null, @type, @data, @at
      returning job_id, seq, type, data, at`,
    ),
  };
}
