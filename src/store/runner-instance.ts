import { sql } from 'kysely';
import { numOrNull } from './codec.js';
import { assertInt, type StoreCtx } from './ctx.js';

/** The runner process holding a runner's connection, as the store has it (0021). */
export interface RunnerInstanceHolder {
  /** Its `hello.instance`; null for an older runner that sends none. */
  instance: string | null;
  /** When that process first connected, epoch ms (null when unknown). */
  since: number | null;
  /** Its last `hello`/heartbeat, epoch ms (server clock). */
  lastHeartbeatAt: number | null;
  /** The runner's name and version as of that process's `hello`. */
  name: string;
  version: string | null;
}

/** Outcome of {@link claimRunnerInstance}. */
export type RunnerInstanceClaim = { ok: true } | { ok: false; reason: 'revoked' } | { ok: false; reason: 'in_use'; holder: RunnerInstanceHolder };

/** What a `hello` claims: the process (`instance`, null for an older runner) on connection `conn` (a server-side id, unique per socket). */
export interface InstanceClaimRequest {
  instance: string | null;
  conn: string;
  /** Server clock, epoch ms: becomes the last heartbeat (and `since` for a process not seen before). */
  now: number;
  /** A holder not heard since before this (epoch ms: now − the heartbeat timeout) is stale and is taken over. */
  staleBefore: number;
}

/**
 * A `hello` claims runner `id` for connection `conn`, in one conditional UPDATE (so two
 * replicas deciding at once never both win): it takes the runner when nobody holds it (the
 * holder's connection closed), when the holder is the same process (`instance` equal: a
 * reconnect replaces its old socket), when the holder or the claimant is an older runner
 * without an instance (today's "newest wins"), or when the holder is stale (no heartbeat since
 * `staleBefore`). Taking it also counts as a heartbeat: connected, not offline, last heartbeat
 * = now; `since` is kept for the same process, else now.
 * @returns `{ ok: true }`; `revoked` when the runner is revoked or unknown; `in_use` with the
 *   live holder otherwise (another process with this credential).
 */
export async function claimRunnerInstance(c: StoreCtx, id: number, r: InstanceClaimRequest): Promise<RunnerInstanceClaim> {
  assertInt('now', r.now, 0);
  assertInt('staleBefore', r.staleBefore);
  const { instance } = r;
  for (let tries = 0; ; tries++) {
    let q = c.db
      .updateTable('runners')
      .set({
        instance,
        instance_conn: r.conn,
        instance_since: instance === null ? r.now : sql<number>`case when instance = ${instance} then coalesce(instance_since, ${r.now}) else ${r.now} end`,
        connected: 1,
        offline: 0,
        last_heartbeat_at: r.now,
      })
      .where('id', '=', id)
      .where('revoked_at', 'is', null);
    if (instance !== null) {
      q = q.where((eb) =>
        eb.or([
          eb('instance_conn', 'is', null),
          eb('instance', 'is', null),
          eb('instance', '=', instance),
          eb('last_heartbeat_at', 'is', null),
          eb('last_heartbeat_at', '<', r.staleBefore),
        ]),
      );
    }
    const res = await q.executeTakeFirst();
    if (Number(res.numUpdatedRows) > 0) return { ok: true };
    const row = await c.db
      .selectFrom('runners')
      .select(['instance', 'instance_conn', 'instance_since', 'last_heartbeat_at', 'name', 'version', 'revoked_at'])
      .where('id', '=', id)
      .executeTakeFirst();
    if (!row || row.revoked_at !== null) return { ok: false, reason: 'revoked' };
    const lastHeartbeatAt = numOrNull(row.last_heartbeat_at);
    // The holder let go between the UPDATE and this read: try once more.
    const free = row.instance_conn === null || lastHeartbeatAt === null || lastHeartbeatAt < r.staleBefore;
    if (free && tries < 1) continue;
    return {
      ok: false,
      reason: 'in_use',
      holder: { instance: row.instance, since: numOrNull(row.instance_since), lastHeartbeatAt, name: row.name, version: row.version },
    };
  }
}

/**
 * Connection `conn` of runner `id` closed: when it still holds the runner, the runner is
 * disconnected and free for any process (a process that stopped cleanly is not in the way of
 * the next one). A connection another one replaced changes nothing.
 * @returns true when it held the runner.
 */
export async function releaseRunnerInstance(c: StoreCtx, id: number, conn: string): Promise<boolean> {
  const res = await c.db.updateTable('runners').set({ connected: 0, instance_conn: null }).where('id', '=', id).where('instance_conn', '=', conn).executeTakeFirst();
  return Number(res.numUpdatedRows) > 0;
}
