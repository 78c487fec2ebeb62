import { replaceNul } from '../core/json-depth.js';
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer, WebSocket, type RawData } from 'ws';
import {
  RunnerToServer,
  describeIssues,
  type Labels,
  type ServerToRunner,
  type UploadedEvent,
} from '../protocol/index.js';
import type { Store } from '../store/types.js';
import type { FrameMove, OwnerLimits } from '../store/dispatch-types.js';
import type { Logger } from '../core/log.js';
import { hashToken } from '../core/tokens.js';
import { isTerminal } from '../core/job-state.js';
import type { EventBus } from './event-bus.js';
import { bearerToken } from './auth.js';
import { frameMove } from './frame-move.js';
import { fastRunnerFrame } from './frame-fast.js';
import { gapText, uploadedEventsProblem } from './frame-checks.js';
import { endsAttemptUnsucceeded, withPausedAttemptEnd } from './paused-attempt-end.js';
import { endGivenUpAttempt } from './hub-lost-attempt.js';
import { recordStatus } from './status-events.js';
import { noteRunner } from './runner-history.js';
import { activityFrame } from './model-activity.js';
import { RunnerUpdates } from './runner-updates.js';
import { Connection } from './hub-connection.js';
import { checkCurrent, reconcile } from './hub-reconcile.js';
import { CLOSE_CREDENTIAL_IN_USE } from './hub-instance.js';
import { CLOSE_REPLACED, onHello, type HelloHub } from './hub-hello.js';

/** One runner's live WebSocket on this server, as the dispatcher sees it. */
export interface RunnerConnection {
  readonly runnerId: number;
  readonly name: string;
  /** Labels and capacity as of the runner's `hello`. */
  readonly labels: Labels;
  readonly capacity: number;
  /** Browser slots in effect (owner setting, else the runner's offer), ≤ capacity. */
  readonly browserSlots: number;
  /** True once `hello` was handled (the runner may get jobs). */
  readonly ready: boolean;
  /** No dispatch to this runner before this time (epoch ms); set after a rejection. */
  holdUntil: number;
  /** Sends one frame; resolves false when the socket is closed or the write failed. */
  send(msg: ServerToRunner): Promise<boolean>;
}

/** What the hub needs. Times in ms. */
export interface HubOptions {
  store: Store;
  bus: EventBus;
  log: Logger;
  now: () => number;
  /** Told to runners in `welcome`. */
  heartbeatIntervalMs: number;
  /** Told to runners in `welcome` too (they stop their jobs before it runs out: runner/lease.ts). An active job the runner stops reporting for this long is requeued (assigned) or lost (running); a connection not heard for this long may be taken over by another runner process with the same credential. */
  heartbeatTimeoutMs: number;
  /** Called when dispatch may have work: `work` a job was requeued; `capacity` a runner is ready, has more slots, or a job of it ended (dispatcher.ts KickReason). */
  onWork: (reason: 'work' | 'capacity') => void;
  /** A budget-paused attempt still holding this runner that the runner stopped reporting for heartbeatTimeoutMs: its process is gone (server/paused-exit.ts). */
  onPausedGone?: (jobId: number, attempt: number, why: string) => Promise<void>;
  /** Largest frame a runner may send, bytes; a bigger one closes its connection (1009). Default 16 MiB. */
  maxFrameBytes?: number;
  /**
   * Upgrades being authenticated at once above which a new one gets `503` with
   * `Retry-After` (seconds) — "busy, retry after" while the server warms up after a restart.
   * Default 64.
   */
  maxPendingConnects?: number;
}

/** Close codes the hub uses (4000–4999 are the application's). */
export const CLOSE_CODES = {
  /** Another socket of the same runner took over. */
  replaced: CLOSE_REPLACED,
  /** The runner broke the protocol (bad frame, out of order, unknown job); the reason says how. */
  badInput: 4400,
  /** The runner was revoked: do not reconnect. */
  revoked: 4403,
  /** The runner sent nothing for the heartbeat timeout: it may reconnect (and is told then what to stop). */
  silent: 4408,
  /**
   * Another runner process is connected with this runner credential (its `hello.instance`
   * differs and it was heard within the heartbeat timeout, on any replica): this connection is
   * refused, the other is untouched. Do not reconnect: the process needs its own registration.
   */
  credentialInUse: CLOSE_CREDENTIAL_IN_USE,
} as const;

/**
 * The runner hub: accepts runner WebSockets at `/api/runners/connect` (runner credential as
 * `Authorization: Bearer flc_...`, else 401 before the upgrade), validates every frame with
 * {@link RunnerToServer}, and turns frames into store changes: `hello`/`heartbeat` touch the
 * runner and reconcile its running jobs (a heartbeat is answered with `job.activity`, the
 * jobs' model calls for the idle limit: model-activity.ts), `job.events` are stored (fenced by attempt) and
 * acknowledged (events after their attempt's `job.finished` are not stored: the runner gets
 * `job.cancel` with `discard`, as for a stale attempt), `harness.started` / `job.finished` move
 * the job, `job.rejected` requeues it.
 * Frames of one connection are handled strictly in order. Bad input (a frame that is not
 * JSON or fails the schema, a frame before `hello` or a second `hello`, events for a job that
 * does not exist, events that skip an rseq, a frame over `maxFrameBytes`) closes that connection with a reason (code
 * 4400, or 1009 for the size) and touches nothing else. A revoked runner's upgrade gets 401;
 * too many upgrades in flight get 503 with `Retry-After`.
 *
 * One runner, one connection: a new socket is not used (no job, no frame to it, the runner's
 * current connection untouched) until its `hello` claims the runner (store
 * claimRunnerInstance, so replicas agree). The same process (`hello.instance`) reconnecting,
 * an older runner without an instance, or a claim over a holder silent for the heartbeat
 * timeout replaces the old socket (4000); a second process while another is live is refused
 * (`error` frame naming the other process, then 4409) and changes nothing. Heartbeats count
 * only from the connection holding the runner (another one is closed 4000).
 */
export class RunnerHub {
  private readonly wss: WebSocketServer;
  /** The connection holding each runner (its `hello` was accepted), by runner id. */
  private readonly conns = new Map<number, Connection>();
  /** Sockets whose `hello` has not been accepted yet: never used for dispatch or sends. */
  private readonly unhelloed = new Set<Connection>();
  private closing = false;
  /** The store writes of connections that closed on their own (release, history line): close() waits for them, or they found the store closed. */
  private readonly ending = new Set<Promise<unknown>>();
  private pending = 0;
  /** Self-updates in progress (runner-updates.ts): an updating runner gets no new job here. */
  private readonly updates: RunnerUpdates;
  /** What the `hello` handling (hub-hello.ts) uses of this hub. */
  private readonly hello: HelloHub;

  constructor(private readonly o: HubOptions) {
    this.wss = new WebSocketServer({ noServer: true, maxPayload: o.maxFrameBytes ?? 16 * 1024 * 1024 });
    this.updates = new RunnerUpdates(o);
    this.hello = {
      o,
      conns: this.conns,
      unhelloed: this.unhelloed,
      updates: this.updates,
      closeConn: (c, code, reason) => this.closeConn(c, code, reason),
      revoked: (c) => this.revoked(c),
      lostHold: (c) => this.lostHold(c),
    };
  }

  /** True while runner `runnerId` is updating itself as far as this server knows (status `updating`). */
  isUpdating(runnerId: number): boolean {
    return this.updates.has(runnerId);
  }

  /**
   * Tells runner `runnerId`, connected here, to update itself to `version` (`runner.update`),
   * marking it updating first so no job goes to it meanwhile. `already`: it is updating (nothing
   * sent); `not_connected`: it has no ready connection here; `cannot_update`: it said it cannot
   * update itself (`hello.selfUpdate` false: the runner inside `flotilla up`). Nothing changes
   * but for `sent`.
   */
  async requestUpdate(runnerId: number, version: string, from: string | null, by: string): Promise<'sent' | 'already' | 'not_connected' | 'cannot_update'> {
    const c = this.conns.get(runnerId);
    if (!c || !c.ready || c.dead) return 'not_connected';
    if (!c.selfUpdate) return 'cannot_update';
    if (!this.updates.begin(runnerId, version, from, by)) return 'already';
    if (await c.send({ type: 'runner.update', version })) return 'sent';
    this.updates.cancel(runnerId);
    return 'not_connected';
  }

  /**
   * Closes runner `runnerId`'s socket on this server with `code` and `reason` (≤ 120 bytes of
   * text). False when it is not connected here.
   */
  disconnect(runnerId: number, code: number, reason: string): boolean {
    const all = [this.conns.get(runnerId), ...[...this.unhelloed].filter((c) => c.runnerId === runnerId)];
    let any = false;
    for (const c of all) {
      if (!c) continue;
      this.closeConn(c, code, reason);
      any = true;
    }
    return any;
  }

  /** Closes one socket with `code` and `reason` (≤ 120 bytes of text), out of dispatch at once. */
  private closeConn(c: Connection, code: number, reason: string): void {
    // Out of dispatch at once, not when the close handshake ends: a job created right after a
    // revoke went to the closing connection and back to the queue ("could not reach runner").
    c.dead = true;
    c.ready = false;
    c.ws.close(code, reason.slice(0, 120));
  }

  /**
   * Closes (code 4408) every connection here with no heartbeat since `cutoff` (epoch ms): a
   * runner that froze (SIGSTOP, a hung host) keeps its socket open, and the dispatcher would
   * hand the jobs the sweep requeues straight back to it. Goes by the heartbeat (hello or
   * `heartbeat`), as the store's sweep does (sweepStaleRunners), not by any frame: a runner
   * whose job output arrived after its last heartbeat is swept all the same, so it must be
   * closed too. Out of dispatch at once; when it wakes it reconnects, and its `hello` gets each
   * stale attempt cancelled.
   * @returns the runner ids closed.
   */
  closeSilent(cutoff: number): number[] {
    const closed: number[] = [];
    for (const c of [...this.conns.values(), ...this.unhelloed]) {
      if (c.lastHeartbeat >= cutoff || c.dead) continue;
      const t = this.o.now();
      this.o.log.warn('closing a silent runner connection', { runnerId: c.runnerId, silentMs: t - c.lastHeartbeat, lastFrameMs: t - c.lastSeen, hello: c.ready });
      this.closeConn(c, CLOSE_CODES.silent, 'no heartbeat within the timeout');
      closed.push(c.runnerId);
    }
    return closed;
  }

  /**
   * Brings every connection here up to date with the owners' capacity settings as a dispatch pass
   * read them (store listDispatchState `ownerLimits`: every runner with a setting): a setting made
   * through another replica takes effect here before the pass assigns anything, and a runner
   * without one (any more) goes back to what it offered. No kick: the pass is running.
   */
  applyOwnerLimits(limits: readonly OwnerLimits[]): void {
    const by = new Map(limits.map((l) => [l.runnerId, l]));
    for (const c of this.conns.values()) {
      const o = by.get(c.runnerId);
      c.capacity = o?.capacity ?? c.offer.capacity;
      c.browserSlots = Math.min(o?.browserSlots ?? c.offer.browserSlots, c.capacity);
    }
  }

  /** Applies an owner capacity setting to runner `runnerId`'s live connection here (no-op when not connected here). */
  setLimits(runnerId: number, limits: { capacity: number; browserSlots: number }): void {
    const c = this.conns.get(runnerId);
    if (!c) return;
    c.capacity = limits.capacity;
    c.browserSlots = Math.min(limits.browserSlots, limits.capacity);
    this.o.onWork('capacity');
  }

  /** Ready connections (hello received) on this server, except closing ones and runners updating themselves (they take no job). */
  connections(): RunnerConnection[] {
    return [...this.conns.values()].filter((c) => c.ready && !c.dead && !this.updates.has(c.runnerId));
  }

  /** Sends a frame to a runner connected to this server; false when it is not connected here. */
  async send(runnerId: number, msg: ServerToRunner): Promise<boolean> {
    const c = this.conns.get(runnerId);
    return c ? c.send(msg) : false;
  }

  /** Handles an HTTP upgrade for `/api/runners/connect` (call from the server's 'upgrade' event). */
  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    socket.on('error', () => undefined);
    const reject = (status: number, text: string, message: string, retryAfterSec?: number, errorCode?: string) => {
      const code = errorCode ?? (status === 401 ? 'unauthorized' : status === 503 ? 'busy' : 'internal');
      const body = JSON.stringify({ error: { code, message } });
      const retry = retryAfterSec !== undefined ? `Retry-After: ${retryAfterSec}\r\n` : '';
      socket.end(
        `HTTP/1.1 ${status} ${text}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n${retry}Connection: close\r\n\r\n${body}`,
      );
    };
    if (this.closing) return reject(503, 'Service Unavailable', 'server is shutting down', 2);
    const cred = bearerToken(req.headers.authorization);
    if (!cred) return reject(401, 'Unauthorized', 'missing runner credential: send Authorization: Bearer <credential>');
    if (this.pending >= (this.o.maxPendingConnects ?? 64)) {
      // Warming up (e.g. every runner reconnecting after a restart): tell this one when to come back.
      return reject(503, 'Service Unavailable', 'busy, retry after the given seconds', 1 + Math.floor(Math.random() * 4));
    }
    this.pending++;
    this.o.store.findRunnerByCredentialHash(hashToken(cred)).then(
      (runner) => {
        this.pending--;
        if (!runner) return reject(401, 'Unauthorized', 'unknown runner credential');
        // Its own code: a runner that holds a registration token must not quietly register anew (runner.ts).
        if (runner.revokedAt !== null) return reject(401, 'Unauthorized', 'runner revoked: register it again with a new registration token', undefined, 'runner_revoked');
        if (this.closing) return reject(503, 'Service Unavailable', 'server is shutting down', 2);
        this.wss.handleUpgrade(req, socket, head, (ws) => this.attach(runner.id, runner.name, ws));
      },
      (err: unknown) => {
        this.pending--;
        this.o.log.error('runner upgrade failed', { err: String(err) });
        reject(500, 'Internal Server Error', 'internal error');
      },
    );
  }

  /** A new socket: kept aside (not in `conns`, so not used) until its `hello` claims the runner (onHello). */
  private attach(runnerId: number, name: string, ws: WebSocket): void {
    const conn = new Connection(runnerId, name, ws, this.o.now());
    this.unhelloed.add(conn);
    const log = this.o.log.child({ runnerId });
    ws.on('message', (data: RawData, isBinary: boolean) => {
      conn.lastSeen = this.o.now();
      conn.queue = conn.queue
        .then(() => this.onFrame(conn, isBinary ? null : data.toString()))
        .catch((err: unknown) => {
          log.error('runner frame failed', { err: String(err) });
          void conn.send({ type: 'error', message: 'internal error handling the frame' });
        });
    });
    ws.on('error', (err) => log.warn('runner socket error', { err: String(err) }));
    ws.on('close', () => {
      this.unhelloed.delete(conn);
      if (this.conns.get(runnerId) !== conn) return;
      this.conns.delete(runnerId);
      this.updates.disconnected(runnerId);
      log.info('runner disconnected');
      conn.queue = conn.queue
        // Only while it still holds the runner: a connection replaced through another replica changes nothing.
        .then(() => this.o.store.releaseRunnerInstance(runnerId, conn.key))
        .then(() => noteRunner(this.o, runnerId, 'disconnected', 'disconnected (its connection closed)'))
        .catch((err: unknown) => log.warn('marking runner disconnected failed', { err: String(err) }));
      // a runner stopping with the server (`flotilla up`) closes first: its writes must land before the store closes (tester: "driver has already been destroyed")
      const ending = conn.queue;
      this.ending.add(ending);
      void ending.finally(() => this.ending.delete(ending));
    });
  }

  /**
   * Ends a connection that broke the protocol: an `error` frame with the full message, then a
   * close with code 4400 and the (shortened) reason. Other runners and every job are untouched.
   */
  private async refuse(conn: Connection, message: string): Promise<void> {
    this.o.log.warn('closing runner connection: bad input', { runnerId: conn.runnerId, message });
    conn.dead = true;
    await conn.send({ type: 'error', message });
    conn.ws.close(CLOSE_CODES.badInput, message.slice(0, 120));
  }

  /** The runner was revoked (possibly through another replica): close with 4403, no reconnect. */
  private revoked(conn: Connection): void {
    conn.dead = true;
    conn.ready = false;
    this.o.log.warn('closing a revoked runner', { runnerId: conn.runnerId });
    conn.ws.close(CLOSE_CODES.revoked, 'runner revoked');
  }

  /**
   * A touch of the runner failed (store touchRunner false): revoked (4403), or another
   * connection holds the runner now (a newer one of the same process, or one that took over
   * from this silent one, possibly through another replica): closed 4000, as replaced.
   */
  private async lostHold(conn: Connection): Promise<void> {
    const row = await this.o.store.getRunner(conn.runnerId);
    if (!row || row.revokedAt !== null) return this.revoked(conn);
    this.o.log.warn('closing a runner connection that no longer holds its runner', { runnerId: conn.runnerId });
    this.closeConn(conn, CLOSE_REPLACED, 'replaced by a newer connection');
  }

  private async onFrame(conn: Connection, text: string | null): Promise<void> {
    if (conn.dead) return;
    let raw: unknown;
    try {
      if (text === null) throw new Error('binary');
      raw = JSON.parse(text);
      // Tool output may hold NUL (a command printing binary); PostgreSQL text cannot: U+FFFD.
      if (text.includes('\\u0000')) raw = replaceNul(raw);
    } catch {
      return this.refuse(conn, 'bad frame: not a JSON text message');
    }
    // The common frames are checked by hand (frame-fast.ts, same output); zod does the rest and every error message.
    let msg = fastRunnerFrame(raw);
    if (!msg) {
      const parsed = RunnerToServer.safeParse(raw);
      if (!parsed.success) return this.refuse(conn, `bad frame: ${describeIssues(parsed.error.issues)}`);
      msg = parsed.data;
    }
    if (msg.type !== 'hello' && !conn.ready) return this.refuse(conn, `out of order: send hello before ${msg.type}`);
    if (msg.type === 'hello' && conn.ready) return this.refuse(conn, 'out of order: hello sent twice on one connection');
    switch (msg.type) {
      case 'hello':
        return onHello(this.hello, conn, msg);
      case 'heartbeat':
        {
          const t = this.o.now();
          if (!(await this.o.store.touchRunner(conn.runnerId, t, { conn: conn.key }))) return this.lostHold(conn);
          conn.lastHeartbeat = t;
        }
        await reconcile(this.o, conn, msg.running);
        {
          // The idle limit counts model calls: tell the runner about its jobs' calls (issue 4).
          const frame = await activityFrame(this.o.store, msg.running, this.o.now());
          if (frame) await conn.send(frame);
        }
        return;
      case 'job.accepted':
        await checkCurrent(this.o, conn, msg.jobId, msg.attempt);
        return;
      case 'job.rejected':
        return this.onRejected(conn, msg.jobId, msg.attempt, msg.reason);
      case 'runner.update':
        if (this.updates.report(conn.runnerId, msg)) this.o.onWork('capacity');
        return;
      case 'job.events': {
        const problem = uploadedEventsProblem(msg.events);
        if (problem) return this.refuse(conn, problem);
        return this.onEvents(conn, msg.jobId, msg.attempt, msg.events);
      }
    }
  }

  private async onRejected(conn: Connection, jobId: number, attempt: number, reason: string): Promise<void> {
    const t = this.o.now();
    const job = await this.o.store.getJob(jobId);
    if (!job || job.runnerId !== conn.runnerId) return;
    if (await this.o.store.requeueJob(jobId, attempt, t)) {
      conn.holdUntil = t + 1000;
      await recordStatus(this.o.store, this.o.bus, jobId, 'queued', `runner ${conn.name} refused it (${reason}); back in the queue`, t, conn.runnerId);
      this.o.onWork('work');
    }
  }

  private async onEvents(conn: Connection, jobId: number, attempt: number, uploaded: readonly UploadedEvent[]): Promise<void> {
    const { store, bus } = this.o;
    // One store call (store/runner-frame.ts): the events, fenced by runner and attempt, and the
    // status change they carry (frame-move.ts) in one transaction. The move follows the uploaded
    // events (not only newly stored ones) so a resend after a crash before the ack still moves
    // the job; it is conditional on the job's status and attempt.
    // A paused job's attempt end is stored as `attempt.ended`, not as the job's end (paused-attempt-end.ts).
    const events = endsAttemptUnsucceeded(uploaded) ? withPausedAttemptEnd(await store.getJob(jobId), attempt, uploaded) : uploaded;
    const now = this.o.now();
    const res = await store.applyRunnerFrame({ jobId, attempt, runnerId: conn.runnerId, events, ...withMove(frameMove(events, now)) }, now);
    if (!res.accepted) {
      const job = res.job;
      if (!job) return this.refuse(conn, `unknown job ${jobId}`);
      // Storing it would leave rseqs missing: a fault; the runner's reconnect resends from its ack.
      if (res.gap) return this.refuse(conn, `gap: job ${jobId} attempt ${attempt} events start at rseq ${res.gap.first}, rseq ${gapText(res.gap.upTo, res.gap.first)} never arrived`);
      // A stale attempt: the job was lost, went back to the queue, or moved to another runner.
      // (A queued job is on no runner: its status says why, before the runner check.)
      const reason =
        job.status === 'queued' || (job.status === 'lost' && job.runnerId === conn.runnerId)
          ? `stale attempt: the job is ${job.status}`
          : job.runnerId !== conn.runnerId
            ? 'job belongs to another runner'
            : 'stale attempt: the job was reassigned';
      await conn.send({ type: 'job.cancel', jobId, attempt, reason, discard: true });
      return;
    }
    if (res.stored.length) bus.publish(jobId, res.stored);
    if (res.moved) {
      bus.publish(jobId);
      if (isTerminal(res.moved.status)) this.o.onWork('capacity');
    }
    await conn.send({ type: 'ack', jobId, attempt, upTo: res.upTo });
    // a runner that gave the attempt up (stopped, its lease out): ended now, not at the sweep
    await endGivenUpAttempt(this.o, conn, jobId, attempt, events);
    if (res.afterFinish) {
      // Events after the attempt's job.finished were not stored: the attempt is over, as for a
      // stale one (its process must go, its undelivered events are dropped).
      const { finishedRseq, refused } = res.afterFinish;
      this.o.log.warn('runner events after job.finished refused', { runnerId: conn.runnerId, jobId, attempt, finishedRseq, refused });
      await conn.send({ type: 'job.cancel', jobId, attempt, reason: `attempt ${attempt} ended with job.finished (rseq ${finishedRseq}): ${refused} later event${refused === 1 ? '' : 's'} refused`, discard: true });
    }
  }

  /**
   * Refuses new runner connections from now on (503, `retry-after: 2`) and keeps those open:
   * while the server stops, its runners' heartbeats are still answered, so their leases hold
   * through the gateway's drain and a restart (server.ts close).
   */
  stopAccepting(): void {
    this.closing = true;
  }

  /** Closes every runner socket (1001) and waits for in-flight frame handling to finish. */
  async close(): Promise<void> {
    this.closing = true;
    const held = [...this.conns.values()];
    const conns = [...held, ...this.unhelloed];
    this.conns.clear();
    this.unhelloed.clear();
    for (const c of conns) c.ws.close(1001, 'server shutting down');
    const closed = conns.map(
      (c) =>
        new Promise<void>((resolve) => {
          if (c.ws.readyState === WebSocket.CLOSED) return resolve();
          const t = setTimeout(() => {
            c.ws.terminate();
            resolve();
          }, 1000);
          c.ws.once('close', () => {
            clearTimeout(t);
            resolve();
          });
        }),
    );
    await Promise.all(closed);
    await Promise.all([...conns.map((c) => c.queue), ...this.ending]);
    // Runners of this server are disconnected now (and free for their next connection, on any
    // replica); the sweep judges their jobs later.
    await Promise.all(held.map((c) => this.o.store.releaseRunnerInstance(c.runnerId, c.key).catch(() => undefined)));
    await new Promise<void>((resolve) => this.wss.close(() => resolve()));
  }
}

/** `{ move }` when there is one (exactOptionalPropertyTypes: no `move: undefined`). */
function withMove(move: FrameMove | undefined): { move?: FrameMove } {
  return move ? { move } : {};
}
