import { WebSocket } from 'ws';
import type { RunnerToServer } from '../protocol/index.js';
import { bindLabels } from '../core/runner-labels.js';
import type { Connection } from './hub-connection.js';
import { refuseSecondProcess } from './hub-instance.js';
import { helloName } from './hub-names.js';
import { reconcile } from './hub-reconcile.js';
import type { HubOptions } from './hub.js';
import { noteRunner } from './runner-history.js';
import type { RunnerUpdates } from './runner-updates.js';

// A runner's `hello` on a new socket (hub.ts): the claim of the runner for this socket, then the
// welcome. Split from hub.ts (one concern per file); the hub hands in what it keeps.

/** The close code of a socket another socket of the same runner took over (hub.ts CLOSE_CODES.replaced). */
export const CLOSE_REPLACED = 4000;

/** What the hello handling needs of the hub (hub.ts RunnerHub): its options, connections and closers. */
export interface HelloHub {
  readonly o: HubOptions;
  /** The connection holding each runner (its `hello` was accepted), by runner id. */
  readonly conns: Map<number, Connection>;
  /** Sockets whose `hello` has not been accepted yet: never used for dispatch or sends. */
  readonly unhelloed: Set<Connection>;
  /** Self-updates in progress (runner-updates.ts). */
  readonly updates: RunnerUpdates;
  /** Closes one socket with `code` and `reason`, out of dispatch at once. */
  closeConn(c: Connection, code: number, reason: string): void;
  /** The runner was revoked: close with 4403, no reconnect. */
  revoked(conn: Connection): void;
  /** A touch of the runner failed: revoked (4403), or another connection holds it now (4000). */
  lostHold(conn: Connection): Promise<void>;
}

/**
 * Handles the `hello` of `conn` (its first frame; the hub checked the order):
 * 1. claims the runner for this socket in the store (claimRunnerInstance, so every replica
 *    agrees): a revoked runner is closed 4403; a second runner process with the same
 *    credential while the first is live is refused (`error` frame, 4409: hub-instance.ts) and
 *    changes nothing; a socket closed meanwhile lets go of the claim again;
 * 2. the socket becomes the runner's connection here (an older one of it is closed 4000);
 * 3. labels (those bound by its registration token win: core/runner-labels.ts), capacity,
 *    browser slots and version are stored as a heartbeat (a lost hold closes it: hub lostHold);
 *    the name it asks for is taken when free (hub-names.ts); `connected` goes in its history;
 * 4. `welcome` (heartbeat interval and timeout, server time, ignored labels, the name in
 *    effect when it differs), then its reported jobs are reconciled with the store as after a
 *    restart (hub-reconcile.ts, `fresh`), its update state noted (runner-updates.ts), and it is
 *    ready for dispatch (`onWork('capacity')`).
 */
export async function onHello(hub: HelloHub, conn: Connection, msg: Extract<RunnerToServer, { type: 'hello' }>): Promise<void> {
  const o = hub.o;
  const store = o.store;
  const id = conn.runnerId;
  const t = o.now();
  conn.instance = msg.instance ?? null;
  // Claim the runner for this socket before anything uses it (hub docstring, store claimRunnerInstance).
  const claim = await store.claimRunnerInstance(id, { instance: conn.instance, conn: conn.key, now: t, staleBefore: t - o.heartbeatTimeoutMs });
  if (!claim.ok) {
    if (claim.reason === 'revoked') return hub.revoked(conn);
    conn.dead = true;
    return refuseSecondProcess(o, conn, claim.holder, t);
  }
  if (conn.dead || conn.ws.readyState !== WebSocket.OPEN) {
    // Closed meanwhile (its close handler ran before it held the runner): let go again.
    await store.releaseRunnerInstance(id, conn.key);
    return;
  }
  hub.unhelloed.delete(conn);
  const old = hub.conns.get(id);
  hub.conns.set(id, conn);
  if (old && old !== conn) hub.closeConn(old, CLOSE_REPLACED, 'replaced by a newer connection');
  const row = await store.getRunner(id);
  // Labels from the registration token are binding: the runner's own may only add keys.
  const { labels, refused } = bindLabels(row?.boundLabels ?? {}, msg.labels);
  if (refused.length) o.log.warn('runner labels ignored: bound by its registration token', { runnerId: id, keys: refused });
  const browserSlots = msg.browserSlots ?? 1;
  if (!(await store.touchRunner(id, t, { labels, capacity: msg.capacity, browserSlots, version: msg.version, conn: conn.key }))) return hub.lostHold(conn);
  conn.lastHeartbeat = t;
  conn.name = await helloName(o, id, row?.name ?? conn.name, msg.name);
  o.log.info('runner connected', { runnerId: id, name: conn.name, instance: conn.instance });
  void noteRunner(o, id, 'connected', `connected as ${conn.name}`);
  conn.labels = labels;
  conn.offer = { capacity: msg.capacity, browserSlots };
  conn.selfUpdate = msg.selfUpdate !== false;
  conn.capacity = row?.ownerCapacity ?? msg.capacity;
  conn.browserSlots = Math.min(row?.ownerBrowserSlots ?? browserSlots, conn.capacity);
  const ignoredLabels = refused.map((key) => ({ key, asked: msg.labels[key] ?? '', bound: labels[key] ?? '' }));
  await conn.send({
    type: 'welcome',
    runnerId: id,
    heartbeatIntervalMs: o.heartbeatIntervalMs,
    // The runner stops its jobs before this server can declare it lost (runner/lease.ts).
    heartbeatTimeoutMs: o.heartbeatTimeoutMs,
    serverTime: new Date(o.now()).toISOString(),
    ...(ignoredLabels.length ? { ignoredLabels } : {}),
    ...(msg.name !== undefined && conn.name !== msg.name ? { name: conn.name } : {}),
  });
  await reconcile(o, conn, msg.running, true);
  hub.updates.hello(conn.runnerId, msg.updating, msg.version);
  conn.ready = true;
  o.onWork('capacity');
}
