// Test helper (not shipped behaviour): a small control plane that speaks the runner protocol
// over a real HTTP server + `ws` WebSocketServer, records what a runner sends, and dedupes
// uploaded events by (job, attempt, rseq) the way the real server does.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { WebSocketServer, type WebSocket } from 'ws';
import {
  AgentDefinition,
  RunnerToServer,
  type JobAssignment,
  type ServerToRunner,
  type UploadedEvent,
} from '../../protocol/index.js';

type Hello = Extract<RunnerToServer, { type: 'hello' }>;

export interface FakeControlPlaneOptions {
  heartbeatIntervalMs?: number;
  /** `welcome.heartbeatTimeoutMs`, ms; default 10000; null: left out (an older server). */
  heartbeatTimeoutMs?: number | null;
  runnerId?: number;
  /** `auto`: ack every job.events frame; `none`: never ack (until switched back). */
  ack?: 'auto' | 'none';
  /** More fields of every `welcome` (e.g. `name`: the runner's name is another than its hello asked for). */
  welcomeExtra?: Record<string, unknown>;
  /** Other HTTP requests (e.g. a scripted model at /v1/messages); return false for 404. */
  onHttp?: (req: IncomingMessage, res: ServerResponse) => boolean;
}

export class FakeControlPlane {
  readonly registrationTokens = new Set<string>(['flr_testregistrationtoken']);
  readonly credentials = new Map<string, number>();
  /** Credentials refused as revoked (401 `runner_revoked`, as the hub answers a revoked runner). */
  readonly revoked = new Set<string>();
  registerCalls = 0;
  readonly frames: RunnerToServer[] = [];
  readonly badFrames: string[] = [];
  readonly hellos: Hello[] = [];
  readonly connections: WebSocket[] = [];
  /**
   * Stored events per `${jobId}:${attempt}`, by rseq, in rseq order: an event is stored only
   * when its rseq is the next one, as the real server stores them.
   */
  readonly stored = new Map<string, Map<number, UploadedEvent>>();
  /** The stored `job.finished` per `${jobId}:${attempt}` (looked up after every frame: no scan of the events). */
  private readonly finishedEvents = new Map<string, Extract<UploadedEvent, { type: 'job.finished' }>>();
  /** Every uploaded event received, duplicates included. */
  received = 0;
  /** Frames whose rseq would leave a gap after what is stored. */
  readonly gaps: string[] = [];
  ack: 'auto' | 'none';
  /** Called for each heartbeat received (after it is recorded, before any reply). */
  onHeartbeat: (() => void) | null = null;
  url = '';
  private readonly http: Server;
  private readonly wss = new WebSocketServer({ noServer: true });
  /** Set by {@link silence}. */
  private silent = false;
  private socket: WebSocket | null = null;
  private readonly waiters = new Set<() => void>();
  /** Model-call activity per `${jobId}:${attempt}` (lastAt epoch ms), answered to heartbeats as `job.activity`. */
  readonly activity = new Map<string, { inFlight: number; lastAt: number }>();
  /** Cancels not yet acknowledged by a `job.finished`, redelivered on each heartbeat. */
  private readonly cancels = new Map<string, ServerToRunner>();

  constructor(private readonly opts: FakeControlPlaneOptions = {}) {
    this.ack = opts.ack ?? 'auto';
    this.http = createServer((req, res) => {
      if (req.method === 'POST' && req.url === '/api/runners/register') {
        let body = '';
        req.on('data', (c: Buffer) => (body += c.toString()));
        req.on('end', () => {
          this.registerCalls++;
          const b = JSON.parse(body) as { token?: string };
          if (!b.token || !this.registrationTokens.delete(b.token)) {
            res.writeHead(401, { 'content-type': 'application/json' });
            res.end(JSON.stringify({ error: { code: 'unauthorized', message: 'registration token unknown, used or expired' } }));
            return;
          }
          const id = this.opts.runnerId ?? 7;
          const credential = `flc_credential${this.credentials.size + 1}xxxxxxxx`;
          this.credentials.set(credential, id);
          res.writeHead(201, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ runnerId: id, credential }));
        });
        return;
      }
      if (this.opts.onHttp?.(req, res)) return;
      res.writeHead(404);
      res.end();
    });
    this.http.on('upgrade', (req, socket, head) => {
      const auth = req.headers.authorization ?? '';
      const cred = auth.startsWith('Bearer ') ? auth.slice(7) : '';
      if (req.url !== '/api/runners/connect' || !this.credentials.has(cred) || this.revoked.has(cred)) {
        // as the hub answers (server/hub.ts): a JSON error naming why
        const error = this.revoked.has(cred) ? { code: 'runner_revoked', message: 'runner revoked: register it again with a new registration token' } : { code: 'unauthorized', message: 'unknown runner credential' };
        const body = JSON.stringify({ error });
        socket.end(`HTTP/1.1 401 Unauthorized\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
        return;
      }
      this.wss.handleUpgrade(req, socket, head, (ws) => this.onConnection(ws, this.credentials.get(cred) as number));
    });
  }

  async listen(): Promise<this> {
    await new Promise<void>((r) => this.http.listen(0, '127.0.0.1', r));
    this.url = `http://127.0.0.1:${(this.http.address() as AddressInfo).port}`;
    return this;
  }

  async close(): Promise<void> {
    for (const ws of this.connections) ws.terminate();
    this.wss.close();
    await new Promise<void>((r) => this.http.close(() => r()));
  }

  /** Sends a frame to the connected runner. */
  send(msg: ServerToRunner | string): void {
    if (!this.socket) throw new Error('no runner connected');
    this.socket.send(typeof msg === 'string' ? msg : JSON.stringify(msg));
  }

  /**
   * Cancels an attempt the way the real hub does: a `job.cancel` now, and again after every
   * heartbeat while the attempt has not reported `job.finished` — a cancel sent on a
   * connection that was being replaced (a reconnect under load) is not lost.
   */
  cancel(jobId: number, attempt: number, reason: string): void {
    this.cancels.set(`${jobId}:${attempt}`, { type: 'job.cancel', jobId, attempt, reason });
    if (this.socket) this.send({ type: 'job.cancel', jobId, attempt, reason });
  }

  /**
   * `true`: the runner's frames stop reaching "the server", as in a network stall: every socket
   * (also one opened meanwhile) stops being read, so nothing is recorded or answered (no pong,
   * ack or welcome) and what the runner sends waits in TCP buffers. `false`: reading resumes and
   * what waited arrives, in order.
   */
  silence(on: boolean): void {
    this.silent = on;
    for (const ws of this.connections) {
      if (on) ws.pause();
      else ws.resume();
    }
  }

  /** Cuts the runner's connection abruptly (as a network failure would). */
  dropConnection(): void {
    this.socket?.terminate();
    this.socket = null;
  }

  get connected(): boolean {
    return this.socket !== null;
  }

  /** Stored events of one attempt, in rseq order. */
  events(jobId: number, attempt = 1): UploadedEvent[] {
    const m = this.stored.get(`${jobId}:${attempt}`);
    return m ? [...m.values()] : [];
  }

  /** The attempt's stored `job.finished`, if any. */
  finished(jobId: number, attempt = 1): Extract<UploadedEvent, { type: 'job.finished' }> | undefined {
    return this.finishedEvents.get(`${jobId}:${attempt}`);
  }

  /** Resolves when `pred()` holds (checked after every frame and every 20 ms). */
  waitFor(pred: () => boolean, timeoutMs = 20_000, what = 'condition'): Promise<void> {
    return new Promise((resolve, reject) => {
      const check = () => {
        if (!pred()) return;
        cleanup();
        resolve();
      };
      const timer = setTimeout(() => {
        cleanup();
        reject(new Error(`timed out waiting for ${what}`));
      }, timeoutMs);
      const poll = setInterval(check, 20);
      const cleanup = () => {
        clearTimeout(timer);
        clearInterval(poll);
        this.waiters.delete(check);
      };
      this.waiters.add(check);
      check();
    });
  }

  private onConnection(ws: WebSocket, runnerId: number): void {
    this.socket = ws;
    this.connections.push(ws);
    if (this.silent) ws.pause();
    ws.on('message', (data) => {
      const text = data.toString();
      const parsed = RunnerToServer.safeParse(JSON.parse(text));
      if (!parsed.success) {
        this.badFrames.push(text);
        return;
      }
      const msg = parsed.data;
      this.frames.push(msg);
      if (msg.type === 'hello') {
        this.hellos.push(msg);
        const timeout = this.opts.heartbeatTimeoutMs === undefined ? 10_000 : this.opts.heartbeatTimeoutMs;
        ws.send(JSON.stringify({ type: 'welcome', runnerId, heartbeatIntervalMs: this.opts.heartbeatIntervalMs ?? 200, ...(timeout !== null ? { heartbeatTimeoutMs: timeout } : {}), serverTime: new Date().toISOString(), ...this.opts.welcomeExtra }));
      } else if (msg.type === 'heartbeat') {
        this.onHeartbeat?.();
        if (msg.running.length) {
          // As the hub does: model-call activity of the reported attempts (set by tests in `activity`).
          const jobs = msg.running.flatMap((r) => {
            const a = this.activity.get(`${r.jobId}:${r.attempt}`);
            return a ? [{ jobId: r.jobId, attempt: r.attempt, inFlight: a.inFlight, idleMs: Math.max(0, Date.now() - a.lastAt) }] : [];
          });
          ws.send(JSON.stringify({ type: 'job.activity', jobs }));
        }
        for (const [key, cancel] of this.cancels) {
          const [jobId, attempt] = key.split(':').map(Number) as [number, number];
          if (this.finished(jobId, attempt)) this.cancels.delete(key);
          else ws.send(JSON.stringify(cancel));
        }
      } else if (msg.type === 'job.events') {
        const key = `${msg.jobId}:${msg.attempt}`;
        const m = this.stored.get(key) ?? new Map<number, UploadedEvent>();
        this.stored.set(key, m);
        for (const e of msg.events) {
          this.received++;
          if (e.rseq > m.size + 1) this.gaps.push(`${key} got rseq ${e.rseq} with ${m.size} stored`);
          else if (!m.has(e.rseq)) {
            m.set(e.rseq, e);
            if (e.type === 'job.finished') this.finishedEvents.set(key, e);
          }
        }
        if (this.ack === 'auto') ws.send(JSON.stringify({ type: 'ack', jobId: msg.jobId, attempt: msg.attempt, upTo: m.size }));
      }
      for (const w of [...this.waiters]) w();
    });
    ws.on('close', () => {
      if (this.socket === ws) this.socket = null;
    });
  }

  /** Acks everything stored so far for every attempt. */
  ackAll(): void {
    for (const [key, m] of this.stored) {
      const [jobId, attempt] = key.split(':').map(Number) as [number, number];
      this.send({ type: 'ack', jobId, attempt, upTo: m.size });
    }
  }
}

/** A job assignment for tests: agent `test-fixer` on harness claude-code with the given prompt. */
export function assignment(jobId: number, promptText: string, input: Record<string, unknown>, over: Partial<JobAssignment> = {}, limits: { timeoutSeconds?: number; maxTurns?: number } = {}): JobAssignment {
  const agent = AgentDefinition.parse({
    name: 'test-fixer',
    harness: 'claude-code',
    model: 'claude-sonnet-4-5',
    allowedTools: ['Bash', 'Read'],
    limits: { maxTurns: limits.maxTurns ?? 7, timeoutSeconds: limits.timeoutSeconds ?? 60, defaultBudgetUsd: 1 },
    promptText,
  });
  return { jobId, rootId: jobId, attempt: 1, agent, input, token: `flj_jobtoken${jobId}secretvalue`, resumeSessionId: null, ...over };
}
