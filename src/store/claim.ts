import { sql, type Transaction } from 'kysely';
import type { JobHolds, Labels } from '../protocol/index.js';
import { selectorMatches } from '../core/labels.js';
import { num, toJobRow } from './codec.js';
import { assertInt, type StoreCtx } from './ctx.js';
import { runnerTakesJobs } from './claim-runner.js';
import type { Database } from './schema.js';
import type { JobRow } from './types.js';

/** Candidates read in the first round on SQLite (usually the first fits), growing ×4 up to the max. */
const SQLITE_FIRST_BATCH = 8;
const SQLITE_MAX_BATCH = 512;

/** The assignment columns of a claim (attempt + 1 is added by the statement itself). */
function assignment(runnerId: number, tokenHash: string, now: number, holds: JobHolds = 'workspace') {
  return { status: 'assigned', runner_id: runnerId, assigned_at: now, token_hash: tokenHash, holds } as const;
}

/**
 * Dispatch: takes the highest-priority, oldest (lowest id) queued job whose selector is a
 * subset of `runner.labels` and assigns it (status assigned, attempt + 1, runner, assignedAt,
 * token hash). Null when nothing queued matches, or when the store has the runner revoked or
 * offline (claim-runner.ts). A job pinned to another runner (`pinned_runner_id`, 0004: it
 * resumes a session whose workspace is there) is never taken.
 * - PostgreSQL: one UPDATE whose subquery picks the row with `selector <@ labels` and
 *   `FOR UPDATE SKIP LOCKED`, so concurrent servers never take the same job (and never wait
 *   on each other). A row locked at that instant by another writer is skipped this round.
 * - SQLite: one transaction on the single connection: candidates in dispatch order, matched
 *   in JS with core's selectorMatches, then a conditional UPDATE ... WHERE status = 'queued'.
 */
export async function claimJob(c: StoreCtx, runner: { id: number; labels: Labels }, tokenHash: string, now: number): Promise<JobRow | null> {
  assertInt('runner.id', runner.id, 1);
  assertInt('now', now, 0);
  if (c.dialect === 'postgres') {
    const labels = c.codec.json(runner.labels);
    const row = await c.db
      .updateTable('jobs')
      .set((eb) => ({ ...assignment(runner.id, tokenHash, now), attempt: eb('attempt', '+', 1) }))
      .where('id', '=', (eb) =>
        eb
          .selectFrom('jobs')
          .select('id')
          .where('status', '=', 'queued')
          .where(sql<boolean>`selector <@ ${labels}::jsonb`)
          .where((eb) => eb.or([eb('pinned_runner_id', 'is', null), eb('pinned_runner_id', '=', runner.id)]))
          .orderBy('priority', 'desc')
          .orderBy('id', 'asc')
          .limit(1)
          .forUpdate()
          .skipLocked(),
      )
      .where('status', '=', 'queued')
      .where(runnerTakesJobs(runner.id))
      .returningAll()
      .executeTakeFirst();
    return row ? toJobRow(c.codec, row) : null;
  }
  return c.db.transaction().execute(async (trx) => {
    // One writer: the runner checked once for the whole transaction (claim-runner.ts).
    const live = await trx.selectNoFrom(runnerTakesJobs(runner.id).as('ok')).executeTakeFirst();
    if (!live || !Number(live.ok)) return null;
    let cursor: { priority: number; id: number } | null = null;
    for (let batch = SQLITE_FIRST_BATCH; ; batch = Math.min(batch * 4, SQLITE_MAX_BATCH)) {
      let q = trx
        .selectFrom('jobs')
        .select(['id', 'priority', 'selector'])
        .where('status', '=', 'queued')
        .where((eb) => eb.or([eb('pinned_runner_id', 'is', null), eb('pinned_runner_id', '=', runner.id)]));
      if (cursor) {
        const { priority, id } = cursor;
        q = q.where((eb) => eb.or([eb('priority', '<', priority), eb.and([eb('priority', '=', priority), eb('id', '>', id)])]));
      }
      const rows = await q.orderBy('priority', 'desc').orderBy('id', 'asc').limit(batch).execute();
      for (const r of rows) {
        if (selectorMatches(c.codec.parse(r.selector) as Labels, runner.labels)) {
          const got = await assignSqlite(c, trx, r.id, runner.id, tokenHash, now);
          if (got) return got;
        }
      }
      const last = rows[rows.length - 1];
      if (rows.length < batch || !last) return null;
      cursor = { priority: num(last.priority), id: num(last.id) };
    }
  });
}

/**
 * Like {@link claimJob} but only for job `jobId` (still only if queued, its selector fits, and
 * the runner is neither revoked nor offline).
 * `holds` (0009, default `workspace`) is stored on the job: what it takes on the runner while
 * active, so capacity is counted from the store (the dispatcher decided it fits).
 */
export async function claimJobById(
  c: StoreCtx,
  jobId: number,
  runner: { id: number; labels: Labels },
  tokenHash: string,
  now: number,
  holds: JobHolds = 'workspace',
): Promise<JobRow | null> {
  assertInt('runner.id', runner.id, 1);
  assertInt('now', now, 0);
  if (c.dialect === 'postgres') {
    const labels = c.codec.json(runner.labels);
    const row = await c.db
      .updateTable('jobs')
      .set((eb) => ({ ...assignment(runner.id, tokenHash, now, holds), attempt: eb('attempt', '+', 1) }))
      .where('id', '=', jobId)
      .where('status', '=', 'queued')
      .where(sql<boolean>`selector <@ ${labels}::jsonb`)
      .where((eb) => eb.or([eb('pinned_runner_id', 'is', null), eb('pinned_runner_id', '=', runner.id)]))
      .where(runnerTakesJobs(runner.id))
      .returningAll()
      .executeTakeFirst();
    return row ? toJobRow(c.codec, row) : null;
  }
  // SQLite: one conditional UPDATE (no transaction, no read first); the selector ⊆ labels
  // test in SQL: no selector entry whose value differs from the runner's label of that key.
  const labels = c.codec.json(runner.labels);
  const row = await c.db
    .updateTable('jobs')
    .set((eb) => ({ ...assignment(runner.id, tokenHash, now, holds), attempt: eb('attempt', '+', 1) }))
    .where('id', '=', jobId)
    .where('status', '=', 'queued')
    .where((eb) => eb.or([eb('pinned_runner_id', 'is', null), eb('pinned_runner_id', '=', runner.id)]))
    .where(sql<boolean>`not exists (select 1 from json_each(jobs.selector) as s where s.value is not json_extract(${labels}, '$.' || json_quote(s.key)))`)
    .where(runnerTakesJobs(runner.id))
    .returningAll()
    .executeTakeFirst();
  return row ? toJobRow(c.codec, row) : null;
}

async function assignSqlite(
  c: StoreCtx,
  trx: Transaction<Database>,
  jobId: number,
  runnerId: number,
  tokenHash: string,
  now: number,
  holds: JobHolds = 'workspace',
): Promise<JobRow | null> {
  const row = await trx
    .updateTable('jobs')
    .set((eb) => ({ ...assignment(runnerId, tokenHash, now, holds), attempt: eb('attempt', '+', 1) }))
    .where('id', '=', jobId)
    .where('status', '=', 'queued')
    .returningAll()
    .executeTakeFirst();
  return row ? toJobRow(c.codec, row) : null;
}
