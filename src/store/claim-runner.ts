import { sql, type RawBuilder } from 'kysely';

/**
 * The runner half of every claim (claim.ts, claim-batch.ts, sqlite-claim.ts): a job is assigned
 * to a runner only while the store has that runner neither revoked nor offline, tested in the
 * claim's own statement. The dispatcher matched the job to a connection of its own, but another
 * replica's sweeper may have declared the runner lost a moment ago (its socket here not closed
 * yet: a frozen runner), or an admin revoked it through another replica: such a claim takes
 * nothing and the job stays queued for another runner.
 * The runner row is read from the claim statement's snapshot, not locked: locking it (FOR SHARE)
 * would make every claim wait on heartbeats and could deadlock with the sweep, which locks the
 * runner before its jobs. A sweep that commits after that snapshot may still miss a job claimed
 * at the same instant (its requeue read the job as queued); every sweep requeues the `assigned`
 * jobs of every offline runner (runners.ts sweepStaleRunners), so the next one, on any replica,
 * puts it back in the queue.
 */

/** The condition as SQL text, for fixed statement texts: `runnerIdSql` is the SQL giving the runner id (a column or a parameter). */
export function runnerTakesJobsSql(runnerIdSql: string): string {
  return `exists (select 1 from runners r where r.id = ${runnerIdSql} and r.revoked_at is null and r.offline = 0)`;
}

/** The condition for runner `runnerId`, as a Kysely expression (both engines). */
export function runnerTakesJobs(runnerId: number): RawBuilder<boolean> {
  return sql<boolean>`exists (select 1 from runners r where r.id = ${runnerId} and r.revoked_at is null and r.offline = 0)`;
}
