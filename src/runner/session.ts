import WebSocket from 'ws';
import { describeIssues, oneLine, ServerToRunner, type RunnerToServer, type RunningJobReport } from '../protocol/index.js';
import type { Logger } from '../core/log.js';
import { serverTimeoutMs, type Lease } from './lease.js';
import { backoffDelay, beforeLeaseRunsOut, retryAfterDelay, type ReconnectPolicy } from './reconnect.js';

export type { ReconnectPolicy } from './reconnect.js';

type Welcome = Extract<ServerToRunner, { type: 'welcome' }>;
type Hello = Extract<RunnerToServer, { type: 'hello' }>;

/** Options of a {@link Session}. */
export interface SessionOptions {
  /** Control plane URL, http(s)://host:port; the socket goes to ws(s)://host:port/api/runners/connect. */
  serverUrl: string;
  /** Runner credential, sent as `Authorization: Bearer` on the upgrade. Secret: never logged. */
  credential: string;
  /** The `hello` frame for a (re)connect, built fresh each time (it lists running jobs). */
  hello: () => Hello;
  /** The jobs to report in heartbeats. */
  running: () => RunningJobReport[];
  /** Each `welcome` (first connect and every reconnect): resend what is unacknowledged here. */
  onWelcome: (w: Welcome) => void;
  /** Every other valid frame from the server. */
  onMessage: (msg: Exclude<ServerToRunner, Welcome>) => void;
  /** The server closed the connection because this runner was revoked (close code 4403); the session stops for good. */
  onRevoked?: (reason: string) => void;
  /**
   * The server ended the session for good: this runner was revoked (4403, after onRevoked), or
   * another runner process is connected with the same credential (4409). No reconnect follows;
   * before the first welcome, {@link Session.start} rejects with the same error instead.
   */
  onEnded?: (err: SessionEndedError) => void;
  reconnect: ReconnectPolicy;
  /**
   * The runner's lease on its jobs (lease.ts). The session tells it the server's timeout (each
   * `welcome`) and each moment the server provably heard this runner (the `hello` a `welcome`
   * answered; the heartbeat before a ping the server ponged), and calls its `check` before
   * acting on anything (a frame, a pong, a close, a reconnect, a send), so a runner that was
   * frozen stops its jobs before it uploads or reconnects.
   */
  lease?: Lease;
  log: Logger;
}

/** What one connection knows of its own frames (lease confirmations), times on the lease clock. */
interface LinkState {
  /** When its `hello` was sent. */
  helloSentAt: number;
  /** Outstanding pings by payload: the send time of the last heartbeat sent before each. */
  pings: Map<string, number>;
  pingSeq: number;
}

/** An authentication failure on the upgrade (401/403): retrying with the same credential cannot help. */
export class AuthError extends Error {
  constructor(
    message: string,
    /** The server's error code from the refusal's JSON body (`runner_revoked`, `unauthorized`), null when it gave none. */
    readonly code: string | null = null,
  ) {
    super(message);
    this.name = 'AuthError';
  }
}

/**
 * The server ended the session for good (close `code` 4403 revoked, 4409 credential in use):
 * reconnecting with the same credential cannot help. The message names the server's reason
 * (for 4409 the `error` frame it sent first: which process holds the credential, what to do).
 */
export class SessionEndedError extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
    this.name = 'SessionEndedError';
  }
}

/** `http(s)://host:port[/base]` → `ws(s)://host:port[/base]/api/runners/connect`. */
export function connectUrl(serverUrl: string): string {
  const u = new URL(serverUrl);
  if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new Error(`serverUrl must be http(s)://..., got ${u.protocol}`);
  u.protocol = u.protocol === 'https:' ? 'wss:' : 'ws:';
  u.pathname = `${u.pathname.replace(/\/+$/, '')}/api/runners/connect`;
  u.search = '';
  u.hash = '';
  return u.toString();
}

/** The close code a server uses for a revoked runner (see server/hub.ts CLOSE_CODES). */
export const CLOSE_REVOKED = 4403;
/** The close code a server uses when another runner process holds this credential (server/hub.ts CLOSE_CODES.credentialInUse). */
export const CLOSE_CREDENTIAL_IN_USE = 4409;

/** How long an `error` frame waits for the close that may follow it before it is logged, ms (Session unloggedServerError). */
const SERVER_ERROR_LOG_DELAY_MS = 1_000;

/**
 * The runner's connection to the control plane: one WebSocket, `hello` as the first frame,
 * heartbeats every `welcome.heartbeatIntervalMs` (plus a WebSocket ping; a server silent for
 * three intervals is treated as gone), and reconnects with jittered exponential backoff after
 * any close or error, until {@link close} — or until the server ends it for good (close 4403
 * revoked, 4409 another runner process holds the credential: onEnded). Every incoming frame is
 * validated with `ServerToRunner`; a bad one is logged and ignored. With a `lease` it keeps the
 * runner's lease on its jobs up to date (SessionOptions.lease).
 */
export class Session {
  private ws: WebSocket | null = null;
  private welcomed = false;
  private closed = false;
  private failures = 0;
  private heartbeat: NodeJS.Timeout | null = null;
  private retryTimer: NodeJS.Timeout | null = null;
  private lastSeen = 0;
  private lastError = '';
  /** Set by a 503 reply's Retry-After (seconds) to the upgrade; used by the next delay. */
  private retryAfterSec: number | null = null;
  /** HTTP status of the last refused upgrade. */
  private lastStatus: number | null = null;
  /** The server's reason for refusing the last upgrade (its error message, one line), if it gave one. */
  private lastReason: string | null = null;
  /** The server's error code for refusing the last upgrade (`error.code` of its JSON body), if it gave one. */
  private lastCode: string | null = null;
  private firstWelcome: { resolve: (w: Welcome) => void; reject: (e: Error) => void } | null = null;
  /** The last `error` frame's message on the current connection (a 4409 close explains itself in one first). */
  private lastServerError: string | null = null;
  /**
   * An `error` frame not logged yet: a close that ends the session for good (4409) usually
   * follows it, and its SessionEndedError carries the message (the runner CLI prints it once);
   * logged as a warning when anything else follows, or after {@link SERVER_ERROR_LOG_DELAY_MS}.
   */
  private unloggedServerError: { message: string; timer: NodeJS.Timeout } | null = null;
  private readonly url: string;

  constructor(private readonly opts: SessionOptions) {
    this.url = connectUrl(opts.serverUrl);
  }

  /**
   * Connects and resolves with the first `welcome`.
   * @throws AuthError at once when the server refuses the credential (401/403);
   *   SessionEndedError at once when the server ends the session for good before welcoming it
   *   (4409: another runner process is connected with this credential; 4403: revoked);
   *   Error naming the last failure when no welcome came within `timeoutMs` (connection refused,
   *   server down). Either way the session is closed.
   */
  start(timeoutMs: number): Promise<Welcome> {
    return new Promise<Welcome>((resolve, reject) => {
      const timer = setTimeout(() => {
        fail(new Error(`could not connect to ${this.opts.serverUrl} within ${timeoutMs} ms: ${this.lastError || 'no welcome from the server'}`));
      }, timeoutMs);
      const fail = (e: Error) => {
        clearTimeout(timer);
        this.firstWelcome = null;
        void this.close();
        reject(e);
      };
      this.firstWelcome = {
        resolve: (w) => {
          clearTimeout(timer);
          this.firstWelcome = null;
          resolve(w);
        },
        reject: fail,
      };
      this.connect();
    });
  }

  /** True when connected and welcomed: frames sent now reach the server's runner hub. */
  get ready(): boolean {
    return this.welcomed && this.ws?.readyState === WebSocket.OPEN;
  }

  /** Sends a heartbeat now, out of turn (its reply is a fresh `job.activity`); false when not connected. */
  heartbeatNow(): boolean {
    return this.send({ type: 'heartbeat', running: this.opts.running() });
  }

  /** Sends a frame if {@link ready}; returns false (nothing sent) otherwise. */
  send(msg: RunnerToServer): boolean {
    this.opts.lease?.check();
    if (!this.ready || !this.ws) return false;
    this.ws.send(JSON.stringify(msg));
    return true;
  }

  /** Resolves once everything handed to the socket was written (or the socket is gone). */
  async drain(timeoutMs = 2000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (this.ws && this.ws.readyState === WebSocket.OPEN && this.ws.bufferedAmount > 0 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 10));
    }
  }

  /** Closes the socket for good (no reconnect). */
  async close(): Promise<void> {
    this.closed = true;
    this.stopHeartbeat();
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.retryTimer = null;
    const ws = this.ws;
    this.ws = null;
    this.welcomed = false;
    if (!ws || ws.readyState === WebSocket.CLOSED) return;
    await new Promise<void>((resolve) => {
      const t = setTimeout(() => {
        ws.terminate();
        resolve();
      }, 1000);
      ws.once('close', () => {
        clearTimeout(t);
        resolve();
      });
      if (ws.readyState === WebSocket.CONNECTING) ws.terminate();
      else ws.close(1000, 'runner stopping');
    });
  }

  /** Drops the current connection as if the network failed (tests; a reconnect follows). */
  dropConnection(): void {
    this.ws?.terminate();
  }

  private connect(): void {
    if (this.closed) return;
    const lease = this.opts.lease;
    lease?.check(); // a runner waking up stops its jobs before it reconnects
    const link: LinkState = { helloSentAt: 0, pings: new Map(), pingSeq: 0 };
    const ws = new WebSocket(this.url, {
      headers: { Authorization: `Bearer ${this.opts.credential}` },
      handshakeTimeout: 10_000,
      perMessageDeflate: false,
    });
    this.ws = ws;
    this.welcomed = false;
    this.lastServerError = null;
    ws.on('unexpected-response', (_req, res) => {
      this.lastStatus = res.statusCode ?? null;
      this.lastReason = null;
      this.lastCode = null;
      const ra = Number(res.headers['retry-after']);
      this.retryAfterSec = res.statusCode === 503 && Number.isFinite(ra) && ra > 0 ? Math.min(ra, 300) : null;
      // The server's reason (e.g. "runner revoked: ..."), read before the socket goes: at most 2 KiB.
      let body = '';
      let done = false;
      const end = () => {
        if (done) return;
        done = true;
        this.lastReason = refusalReason(body);
        this.lastCode = refusalCode(body);
        ws.terminate();
      };
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        body += chunk;
        if (body.length >= 2048) {
          res.destroy();
          end();
        }
      });
      res.on('end', end);
      res.on('error', end);
      res.on('close', end);
    });
    ws.on('open', () => {
      lease?.check();
      this.lastSeen = Date.now();
      link.helloSentAt = lease?.now() ?? 0;
      ws.send(JSON.stringify(this.opts.hello()));
    });
    ws.on('message', (data, isBinary) => {
      lease?.check();
      this.lastSeen = Date.now();
      this.onFrame(ws, isBinary ? null : data.toString(), link);
    });
    ws.on('pong', (data) => {
      lease?.check();
      this.lastSeen = Date.now();
      // The server answered this ping: everything sent before it arrived (one TCP stream).
      const id = data.toString();
      const sentAt = link.pings.get(id);
      if (sentAt === undefined) return;
      for (const k of link.pings.keys()) {
        link.pings.delete(k);
        if (k === id) break;
      }
      lease?.confirm(sentAt);
    });
    ws.on('error', (err) => {
      this.lastError = err.message;
      const status = String(this.lastStatus ?? /Unexpected server response: (\d+)/.exec(err.message)?.[1] ?? '');
      this.lastStatus = null;
      if (status === '401' || status === '403') {
        // The server's reason, with the advice unless it gives it ("runner revoked: register it again ...").
        const advice = 'register again with a new registration token';
        const why = !this.lastReason ? advice : /register/i.test(this.lastReason) ? this.lastReason : `${this.lastReason}; ${advice}`;
        const e = new AuthError(`server ${this.opts.serverUrl} refused the runner credential (HTTP ${status}): ${why}`, this.lastCode);
        this.lastError = e.message;
        if (this.firstWelcome) {
          this.firstWelcome.reject(e);
          return;
        }
        // revoked while it was away (asleep, cut off, frozen): as the 4403 close of a connected
        // one, for good — it retried every few seconds for ever (fresh-tester finding)
        if (this.lastCode === 'runner_revoked') {
          this.opts.log.error('the control plane revoked this runner; not reconnecting', { status });
          this.closed = true;
          this.opts.onRevoked?.(this.lastReason ?? 'runner revoked');
          this.opts.onEnded?.(new SessionEndedError(CLOSE_REVOKED, `server ${this.opts.serverUrl} revoked this runner (HTTP ${status} when it reconnected: ${why})`));
          return;
        }
        this.opts.log.error('runner credential refused; will keep retrying', { status });
        return;
      }
      this.opts.log.warn('runner connection error', { error: err.message });
    });
    ws.on('close', (code, reasonBuf) => {
      lease?.check();
      if (this.ws !== ws) return;
      const wasWelcomed = this.welcomed;
      this.ws = null;
      this.welcomed = false;
      this.stopHeartbeat();
      const ends = code === CLOSE_REVOKED || code === CLOSE_CREDENTIAL_IN_USE;
      // the session's end error carries it: not logged as well (it was printed three times)
      this.logServerError(ends && !this.closed);
      if (this.closed) return;
      if (ends) {
        const reason = reasonBuf.toString() || (code === CLOSE_REVOKED ? 'runner revoked' : 'runner credential in use by another runner process');
        const e = this.endedError(code, reason);
        // the reason once, in the error the session ends with (onEnded; the runner CLI prints it)
        this.opts.log.error(code === CLOSE_REVOKED ? 'the control plane revoked this runner; not reconnecting' : 'the control plane refused this runner process: another one uses its credential; not reconnecting', { code });
        this.closed = true;
        if (code === CLOSE_REVOKED) this.opts.onRevoked?.(reason);
        this.opts.onEnded?.(e);
        this.firstWelcome?.reject(e);
        return;
      }
      if (wasWelcomed) this.opts.log.warn('connection to the control plane lost; reconnecting', { code });
      let delay: number;
      if (this.retryAfterSec !== null) {
        delay = retryAfterDelay(this.retryAfterSec);
        this.opts.log.info('control plane busy; retrying after', { ms: delay });
        this.retryAfterSec = null;
      } else {
        delay = backoffDelay(this.failures++, this.opts.reconnect);
      }
      delay = beforeLeaseRunsOut(delay, this.opts.running().length > 0 ? (this.opts.lease?.msUntilStop() ?? null) : null);
      this.retryTimer = setTimeout(() => {
        this.retryTimer = null;
        this.connect();
      }, delay);
    });
  }

  private onFrame(ws: WebSocket, text: string | null, link: LinkState): void {
    if (text === null) {
      this.opts.log.warn('ignoring a binary frame from the server');
      return;
    }
    let raw: unknown;
    try {
      raw = JSON.parse(text);
    } catch {
      this.opts.log.warn('ignoring a frame that is not JSON', { frame: text.slice(0, 200) });
      return;
    }
    const parsed = ServerToRunner.safeParse(raw);
    if (!parsed.success) {
      this.opts.log.warn('ignoring a bad frame from the server', { error: describeIssues(parsed.error.issues), frame: text.slice(0, 200) });
      return;
    }
    const msg = parsed.data;
    this.logServerError();
    if (msg.type === 'welcome') {
      this.welcomed = true;
      this.failures = 0;
      // The server recorded the hello (store touch) before it welcomed it.
      this.opts.lease?.setTimeoutMs(serverTimeoutMs(msg));
      this.opts.lease?.confirm(link.helloSentAt);
      this.startHeartbeat(ws, msg.heartbeatIntervalMs, link);
      this.opts.log.info('connected to the control plane', { runnerId: msg.runnerId });
      this.opts.onWelcome(msg);
      this.firstWelcome?.resolve(msg);
      return;
    }
    if (msg.type === 'error') {
      this.lastServerError = msg.message;
      const timer = setTimeout(() => this.logServerError(), SERVER_ERROR_LOG_DELAY_MS);
      timer.unref();
      this.unloggedServerError = { message: msg.message, timer };
    }
    this.opts.onMessage(msg);
  }

  /** The error for a close that ends the session: the server's `error` frame when it sent one (4409 does), else the close reason. */
  /** Logs the {@link unloggedServerError} as a warning (`drop`: forgets it instead). */
  private logServerError(drop = false): void {
    const e = this.unloggedServerError;
    if (e === null) return;
    this.unloggedServerError = null;
    clearTimeout(e.timer);
    if (!drop) this.opts.log.warn('server reported an error', { message: e.message });
  }

  private endedError(code: number, reason: string): SessionEndedError {
    const server = this.opts.serverUrl;
    if (code === CLOSE_REVOKED) return new SessionEndedError(code, `server ${server} revoked this runner (close ${code}: ${reason}): register it again with a new registration token`);
    return new SessionEndedError(code, `server ${server} refused this runner process (close ${code}): ${this.lastServerError ?? reason}`);
  }

  private startHeartbeat(ws: WebSocket, intervalMs: number, link: LinkState): void {
    this.stopHeartbeat();
    const lease = this.opts.lease;
    this.heartbeat = setInterval(() => {
      lease?.check();
      if (ws.readyState !== WebSocket.OPEN) return;
      if (Date.now() - this.lastSeen > 3 * intervalMs) {
        this.opts.log.warn('control plane silent for three heartbeat intervals; reconnecting', { intervalMs });
        ws.terminate();
        return;
      }
      const sentAt = lease?.now() ?? 0;
      ws.send(JSON.stringify({ type: 'heartbeat', running: this.opts.running() } satisfies RunnerToServer));
      // Its pong proves the heartbeat arrived; the payload says which heartbeat (lease.ts).
      const id = String(++link.pingSeq);
      link.pings.set(id, sentAt);
      if (link.pings.size > 64) link.pings.delete(link.pings.keys().next().value as string);
      ws.ping(id);
    }, intervalMs);
  }

  private stopHeartbeat(): void {
    if (this.heartbeat) clearInterval(this.heartbeat);
    this.heartbeat = null;
  }
}

/**
 * The server's error code in a refused upgrade's body (`error.code` of the API's JSON error:
 * `runner_revoked`, `unauthorized`), or null when it is not such a body.
 */
export function refusalCode(body: string): string | null {
  try {
    const j = JSON.parse(body) as { error?: { code?: unknown } };
    const c = typeof j.error === 'object' && j.error !== null ? j.error.code : undefined;
    return typeof c === 'string' && /^[a-z_]{1,40}$/.test(c) ? c : null;
  } catch {
    return null;
  }
}

/**
 * The reason in a refused upgrade's body: the `error.message` of a JSON error (the API's
 * shape), else the text; one line of printable characters, at most 300. Null when empty.
 */
export function refusalReason(body: string): string | null {
  let text = body;
  try {
    const j = JSON.parse(body) as { error?: { message?: unknown } | string; message?: unknown };
    const m = typeof j.error === 'object' && j.error !== null ? j.error.message : typeof j.error === 'string' ? j.error : j.message;
    if (typeof m === 'string') text = m;
  } catch {
    // not JSON: the text itself
  }
  const line = oneLine(text).trim();
  return line ? line.slice(0, 300) : null;
}
