import type { Labels } from '../protocol/index.js';
import { ACTIVE_STATUSES } from '../core/job-state.js';
import { num, toJobRow, toRunnerRow } from './codec.js';
import { assertInt, type StoreCtx } from './ctx.js';
import type { JobRow, RunnerRow } from './types.js';

/** Registers a runner (not yet connected, no heartbeat). @throws on a duplicate credential hash or bad capacity. */
export async function createRunner(
  c: StoreCtx,
  r: { name: string; labels: Labels; capacity: number; credentialHash: string; now: number },
): Promise<RunnerRow> {
  assertInt('capacity', r.capacity, 1);
  assertInt('now', r.now, 0);
  const row = await c.db
    .insertInto('runners')
    .values({
      name: r.name,
      labels: c.codec.json(r.labels),
      capacity: r.capacity,
      version: null,
      credential_hash: r.credentialHash,
      connected: 0,
      offline: 0,
      last_heartbeat_at: null,
      created_at: r.now,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
  return toRunnerRow(c.codec, row);
}

export async function findRunnerByCredentialHash(c: StoreCtx, credentialHash: string): Promise<RunnerRow | null> {
  const row = await c.db.selectFrom('runners').selectAll().where('credential_hash', '=', credentialHash).executeTakeFirst();
  return row ? toRunnerRow(c.codec, row) : null;
}

export async function getRunner(c: StoreCtx, id: number): Promise<RunnerRow | null> {
  const row = await c.db.selectFrom('runners').selectAll().where('id', '=', id).executeTakeFirst();
  return row ? toRunnerRow(c.codec, row) : null;
}

/** All runners, by id ascending. */
export async function listRunners(c: StoreCtx): Promise<RunnerRow[]> {
  const rows = await c.db.selectFrom('runners').selectAll().orderBy('id', 'asc').execute();
  return rows.map((r) => toRunnerRow(c.codec, r));
}

/** Heartbeat / (re)connect: connected, not offline, last heartbeat = now, plus the given fields. */
export async function touchRunner(
  c: StoreCtx,
  id: number,
  now: number,
  fields: { labels?: Labels; capacity?: number; version?: string; name?: string } = {},
): Promise<void> {
  assertInt('now', now, 0);
  if (fields.capacity !== undefined) assertInt('capacity', fields.capacity, 1);
  await c.db
    .updateTable('runners')
    .set({
      connected: 1,
      offline: 0,
      last_heartbeat_at: now,
      ...(fields.labels !== undefined ? { labels: c.codec.json(fields.labels) } : {}),
      ...(fields.capacity !== undefined ? { capacity: fields.capacity } : {}),
      ...(fields.version !== undefined ? { version: fields.version } : {}),
      ...(fields.name !== undefined ? { name: fields.name } : {}),
    })
    .where('id', '=', id)
    .execute();
}

/** The runner's WebSocket closed: connected = false. Its jobs are left alone. */
export async function setRunnerDisconnected(c: StoreCtx, id: number, _now: number): Promise<void> {
  await c.db.updateTable('runners').set({ connected: 0 }).where('id', '=', id).execute();
}

/**
 * Liveness sweep, one transaction: runners whose last heartbeat (or, never having sent one,
 * whose creation) is older than `cutoff` and that are not yet offline become offline and
 * disconnected; then every `assigned`/`running` job on an offline runner becomes `lost`
 * (endReason `runner_lost`, finishedAt = now, token cleared). Both steps are conditional
 * UPDATEs, so two servers sweeping at once never report the same job twice.
 * @returns the jobs marked lost by this call, by id ascending.
 */
export async function sweepStaleRunners(c: StoreCtx, cutoff: number, now: number): Promise<JobRow[]> {
  assertInt('cutoff', cutoff);
  assertInt('now', now, 0);
  return c.db.transaction().execute(async (trx) => {
    await trx
      .updateTable('runners')
      .set({ offline: 1, connected: 0 })
      .where('offline', '=', 0)
      .where((eb) =>
        eb.or([
          eb('last_heartbeat_at', '<', cutoff),
          eb.and([eb('last_heartbeat_at', 'is', null), eb('created_at', '<', cutoff)]),
        ]),
      )
      .execute();
    const lost = await trx
      .updateTable('jobs')
      .set({ status: 'lost', end_reason: 'runner_lost', finished_at: now, token_hash: null })
      .where('status', 'in', [...ACTIVE_STATUSES])
      .where('runner_id', 'in', (eb) => eb.selectFrom('runners').select('id').where('offline', '=', 1))
      .returningAll()
      .execute();
    return lost.map((r) => toJobRow(c.codec, r)).sort((a, b) => num(a.id) - num(b.id));
  });
}
