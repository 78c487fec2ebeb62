// Helpers for the server's tests (not imported by production code): a real server on an
// ephemeral port over a real SQLite store in a temp folder, and a fake runner speaking the
// real WebSocket protocol.
import { mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { WebSocket } from 'ws';
import type { Job, Labels, RunnerToServer, ServerToRunner } from '../protocol/index.js';
import type { Store } from '../store/types.js';
import { openStore } from '../store/open.js';
import type { GatewayConfig } from '../gateway/config.js';
import { startServer, type RunningServer, type ServerOptions } from './server.js';
import { createRegistrationToken } from './auth.js';

/** The repository's shipped agents folder. */
export const SHIPPED_AGENTS = fileURLToPath(new URL('../../agents', import.meta.url));

/** A gateway config that needs no network and no data files. */
export const TEST_GATEWAY: GatewayConfig = {
  provider: 'scripted',
  anthropicBaseUrl: 'http://127.0.0.1:9',
  prices: { version: 'test', models: {}, default: { input: 3, output: 15, cacheWrite5m: 3.75, cacheWrite1h: 6, cacheRead: 0.3 } },
};

/** Extra test agents: `gpu-job` needs a runner labelled gpu=a100. */
export const TEST_AGENTS: Record<string, string> = {
  'gpu-job': [
    'name: gpu-job',
    'version: "3"',
    'harness: command',
    'command: [echo, hi]',
    'limits: { defaultBudgetUsd: 0.5 }',
    'runnerLabels: { gpu: a100 }',
    'inputSchema: { type: object, properties: { n: { type: integer, minimum: 1 } } }',
  ].join('\n'),
};

export interface TestServer {
  server: RunningServer;
  store: Store;
  dataDir: string;
  url: string;
  admin: string;
  /** fetch against the server with the admin token (or `token`, or none with token: null). */
  api(path: string, init?: RequestInit & { token?: string | null; json?: unknown }): Promise<Response>;
  /** A registration token (flr_) with labels. */
  regToken(labels?: Labels): Promise<string>;
  close(): Promise<void>;
}

/**
 * Starts a real server (port 0) over a fresh SQLite store in a temp folder, or over
 * PostgreSQL at `databaseUrl`. `dataDir` reuses a folder (and its admin-token) of another
 * test server, e.g. a second replica; it is then left in place on close.
 */
export async function startTestServer(opts: Partial<ServerOptions> & { databaseUrl?: string } = {}): Promise<TestServer> {
  const { databaseUrl, ...serverOpts } = opts;
  const ownDir = !opts.dataDir;
  const dataDir = opts.dataDir ?? (await mkdtemp(join(tmpdir(), 'flotilla-server-')));
  const agentsDir = join(dataDir, 'agents');
  for (const [name, yaml] of Object.entries(TEST_AGENTS)) {
    await mkdir(join(agentsDir, name), { recursive: true });
    await writeFile(join(agentsDir, name, 'agent.yaml'), yaml);
    await writeFile(join(agentsDir, name, 'prompt.md'), `Run ${name} for {{input.n}}.`);
  }
  const store = await openStore({ dataDir: join(dataDir, 'db'), ...(databaseUrl ? { databaseUrl } : {}) });
  const server = await startServer({
    store,
    dataDir,
    port: 0,
    agentsDirs: [SHIPPED_AGENTS, agentsDir],
    gateway: TEST_GATEWAY,
    ...serverOpts,
  });
  const admin = server.adminToken!;
  const api: TestServer['api'] = (path, init = {}) => {
    const { token, json, ...rest } = init;
    const headers = new Headers(rest.headers);
    const t = token === undefined ? admin : token;
    if (t !== null) headers.set('authorization', `Bearer ${t}`);
    if (json !== undefined) headers.set('content-type', 'application/json');
    return fetch(server.url + path, { ...rest, headers, ...(json !== undefined ? { body: JSON.stringify(json), method: rest.method ?? 'POST' } : {}) });
  };
  return {
    server,
    store,
    dataDir,
    url: server.url,
    admin,
    api,
    regToken: (labels = {}) => createRegistrationToken(store, labels, 60_000, Date.now()),
    async close() {
      await server.close();
      await store.close();
      if (ownDir) await rm(dataDir, { recursive: true, force: true });
    },
  };
}

/** A runner speaking the real protocol over a real WebSocket; frames are collected for assertions. */
export class FakeRunner {
  readonly frames: ServerToRunner[] = [];
  private notify: (() => void) | null = null;
  closed = false;
  /** Close code and reason from the server (or 1006 for a dropped connection), once closed. */
  closeCode: number | null = null;
  closeReason = '';
  /** The runner credential, when {@link FakeRunner.start} registered it (to reconnect as the same runner). */
  credential: string | null = null;

  private constructor(
    readonly ws: WebSocket,
    readonly runnerId: number,
  ) {
    ws.on('message', (data) => {
      this.frames.push(JSON.parse(data.toString()) as ServerToRunner);
      this.notify?.();
    });
    ws.on('close', (code, reason) => {
      this.closed = true;
      this.closeCode = code;
      this.closeReason = reason.toString();
      this.notify?.();
    });
  }

  /** Registers (POST /api/runners/register) and connects; does not send hello. */
  static async start(t: TestServer, o: { name?: string; labels?: Labels; tokenLabels?: Labels; capacity?: number } = {}): Promise<FakeRunner> {
    const reg = await t.api('/api/runners/register', {
      token: null,
      json: { token: await t.regToken(o.tokenLabels ?? {}), name: o.name ?? 'fake', labels: o.labels ?? {}, capacity: o.capacity ?? 1 },
    });
    if (reg.status !== 201) throw new Error(`register failed: ${reg.status} ${await reg.text()}`);
    const { runnerId, credential } = (await reg.json()) as { runnerId: number; credential: string };
    const r = await FakeRunner.connect(t.url, runnerId, credential);
    r.credential = credential;
    return r;
  }

  static connect(url: string, runnerId: number, credential: string): Promise<FakeRunner> {
    const ws = new WebSocket(url.replace(/^http/, 'ws') + '/api/runners/connect', { headers: { authorization: `Bearer ${credential}` } });
    const r = new FakeRunner(ws, runnerId);
    return new Promise((resolve, reject) => {
      ws.once('open', () => resolve(r));
      ws.once('unexpected-response', (_req, res) => reject(new Error(`upgrade refused: ${res.statusCode}`)));
      ws.once('error', reject);
    });
  }

  send(msg: RunnerToServer | Record<string, unknown>): void {
    this.ws.send(JSON.stringify(msg));
  }

  private readonly rseqs = new Map<string, number>();
  /** The next event sequence number of job `jobId`'s attempt `attempt` (each attempt's events from 1). */
  rseq(jobId: number, attempt: number): number {
    const k = `${jobId}/${attempt}`;
    const n = (this.rseqs.get(k) ?? 0) + 1;
    this.rseqs.set(k, n);
    return n;
  }

  /** Sends events of job `jobId`'s attempt `attempt` (rseq and time filled in) and waits for the ack. */
  async events(jobId: number, attempt: number, ...events: Array<{ type: string; data: Record<string, unknown> }>): Promise<void> {
    this.send({ type: 'job.events', jobId, attempt, events: events.map((e) => ({ rseq: this.rseq(jobId, attempt), at: new Date().toISOString(), ...e })) });
    await this.next('ack', () => true, 10_000);
  }

  /**
   * Takes the next assignment of job `jobId` (any attempt), accepts it and reports its harness
   * started with session `sessionId(attempt)`. Its job token and attempt.
   */
  async startJob(jobId: number, sessionId: (attempt: number) => string): Promise<{ token: string; attempt: number }> {
    const a = await this.next('job.assign', (f) => f.assignment.jobId === jobId, 10_000);
    const attempt = a.assignment.attempt;
    this.send({ type: 'job.accepted', jobId, attempt });
    await this.events(jobId, attempt, { type: 'harness.started', data: { harness: 'claude-code', pid: 1, sessionId: sessionId(attempt) } });
    return { token: a.assignment.token, attempt };
  }

  /** Sends hello (with `instance`: as that runner process; without: as an older runner) and waits for welcome. */
  async hello(o: { name?: string; labels?: Labels; capacity?: number; running?: { jobId: number; attempt: number }[]; instance?: string; selfUpdate?: boolean } = {}) {
    this.send({ type: 'hello', name: o.name ?? 'fake', labels: o.labels ?? {}, capacity: o.capacity ?? 1, version: 'test', running: o.running ?? [], ...(o.instance !== undefined ? { instance: o.instance } : {}), ...(o.selfUpdate !== undefined ? { selfUpdate: o.selfUpdate } : {}) });
    return this.next('welcome');
  }

  /**
   * Removes and returns the first collected frame of `type` matching `pred`, waiting up to
   * `timeoutMs` for it. @throws when none arrives in time.
   */
  async next<T extends ServerToRunner['type']>(
    type: T,
    pred: (f: Extract<ServerToRunner, { type: T }>) => boolean = () => true,
    timeoutMs = 5000,
  ): Promise<Extract<ServerToRunner, { type: T }>> {
    const deadline = Date.now() + timeoutMs;
    while (true) {
      const i = this.frames.findIndex((f) => f.type === type && pred(f as Extract<ServerToRunner, { type: T }>));
      if (i >= 0) return this.frames.splice(i, 1)[0] as Extract<ServerToRunner, { type: T }>;
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`no ${type} frame within ${timeoutMs} ms; got ${JSON.stringify(this.frames.map((f) => f.type))}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.notify = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
  }

  /** True when no frame of `type` arrives within `ms`. */
  async none(type: ServerToRunner['type'], ms: number): Promise<boolean> {
    try {
      await this.next(type, () => true, ms);
      return false;
    } catch {
      return true;
    }
  }

  close(): Promise<void> {
    if (this.closed) return Promise.resolve();
    return new Promise((resolve) => {
      this.ws.once('close', () => resolve());
      this.ws.close();
    });
  }

  /** Drops the TCP connection without a close handshake (a crashed runner). */
  kill(): void {
    this.ws.terminate();
  }
}

/** Reads an SSE response until `end` (or `max` events), returning the parsed messages. */
export async function readSse(res: Response, o: { stopAfter?: number; timeoutMs?: number } = {}) {
  const out: { id?: string; event: string; data: string }[] = [];
  const reader = res.body!.getReader();
  const dec = new TextDecoder();
  let buf = '';
  const timer = setTimeout(() => void reader.cancel(), o.timeoutMs ?? 5000);
  try {
    while (true) {
      const { value, done } = await reader.read();
      if (done) break;
      buf += dec.decode(value, { stream: true });
      let idx: number;
      while ((idx = buf.indexOf('\n\n')) >= 0) {
        const block = buf.slice(0, idx);
        buf = buf.slice(idx + 2);
        const msg: { id?: string; event: string; data: string } = { event: 'message', data: '' };
        let hasField = false;
        for (const line of block.split('\n')) {
          if (line.startsWith(':')) continue;
          const [k, ...rest] = line.split(': ');
          const v = rest.join(': ');
          hasField = true;
          if (k === 'id') msg.id = v;
          else if (k === 'event') msg.event = v;
          else if (k === 'data') msg.data = v;
        }
        if (!hasField) continue;
        out.push(msg);
        if (msg.event === 'end' || (o.stopAfter !== undefined && out.length >= o.stopAfter)) {
          await reader.cancel();
          return out;
        }
      }
    }
  } finally {
    clearTimeout(timer);
  }
  return out;
}

/**
 * Polls `fn` every 25 ms until `ok` holds for its value, and returns that value.
 * @throws Error after `timeoutMs` (default 8,000 ms) naming the last value seen.
 */
export async function waitFor<T>(fn: () => Promise<T>, ok: (v: T) => boolean, timeoutMs = 8000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  while (true) {
    const v = await fn();
    if (ok(v)) return v;
    if (Date.now() > deadline) throw new Error(`condition not met in ${timeoutMs} ms: ${JSON.stringify(v)}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/**
 * A `test-fixer` job with `budgetUsd` (examples/calc), assigned to a fresh fake runner of `t`,
 * accepted and running its harness (`claude-code`, session `sessionId`): what a gateway test
 * needs to make model calls. @returns the job, its runner and its job token.
 */
export async function runningJob(t: TestServer, budgetUsd: number, sessionId: string): Promise<{ job: Job; runner: FakeRunner; token: string }> {
  const job = (await (await t.api('/api/jobs', { json: { agent: 'test-fixer', input: { repo: 'examples/calc' }, budgetUsd } })).json()) as Job;
  const runner = await FakeRunner.start(t);
  await runner.hello();
  const assign = await runner.next('job.assign', (f) => f.assignment.jobId === job.id);
  runner.send({ type: 'job.accepted', jobId: job.id, attempt: 1 });
  runner.send({ type: 'job.events', jobId: job.id, attempt: 1, events: [{ rseq: 1, at: new Date().toISOString(), type: 'harness.started', data: { harness: 'claude-code', pid: 1, sessionId } }] });
  await runner.next('ack');
  return { job, runner, token: assign.assignment.token };
}
