import { randomUUID } from 'node:crypto';
import { WebSocket } from 'ws';
import type { Labels, ServerToRunner } from '../protocol/index.js';
import type { RunnerConnection } from './hub.js';

/** A runner's live WebSocket on this server (hub.ts): what the dispatcher sees, and the hub's own state of it. */
export class Connection implements RunnerConnection {
  labels: Labels = {};
  capacity = 1;
  browserSlots = 1;
  /** What the runner offered in its `hello` (`--capacity`, `--browser-slots`): in effect when no owner setting is. */
  offer = { capacity: 1, browserSlots: 1 };
  ready = false;
  holdUntil = 0;
  /** Set once the connection is being closed for bad input: later frames are ignored. */
  dead = false;
  /** When this server last received a frame on it (epoch ms, the hub's clock). */
  lastSeen: number;
  /**
   * When this connection last counted as a heartbeat in the store (its `hello` or a `heartbeat`
   * that touched the runner; epoch ms, the hub's clock; the connection's start before that): what
   * the liveness sweep goes by (store sweepStaleRunners, runners.last_heartbeat_at), not `lastSeen`.
   */
  lastHeartbeat: number;
  name: string;
  /** Active jobs the runner did not report, since when (for lost-assignment detection). */
  readonly missing = new Map<number, { attempt: number; since: number; noticedAt: number }>();
  queue: Promise<void> = Promise.resolve();
  /** Server-side id of this socket (store `instance_conn` while it holds the runner). */
  readonly key: string = randomUUID();
  /** The runner process's `hello.instance` (null: an older runner without one, or no hello yet). */
  instance: string | null = null;
  /** False when the runner said in its `hello` that it cannot update itself (`hello.selfUpdate`). */
  selfUpdate = true;

  constructor(
    readonly runnerId: number,
    name: string,
    readonly ws: WebSocket,
    now: number,
  ) {
    this.name = name;
    this.lastSeen = now;
    this.lastHeartbeat = now;
  }

  send(msg: ServerToRunner): Promise<boolean> {
    if (this.ws.readyState !== WebSocket.OPEN) return Promise.resolve(false);
    return new Promise((resolve) => {
      try {
        this.ws.send(JSON.stringify(msg), (err) => resolve(!err));
      } catch {
        resolve(false);
      }
    });
  }
}
