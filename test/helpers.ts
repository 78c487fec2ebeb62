/**
 * Shared helpers for the end-to-end suites: temp folders, an in-process control plane and
 * runner on a real port, subprocess `flotilla` commands, polling.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { spawn, type ChildProcess } from 'node:child_process';
import { afterAll, beforeAll } from 'vitest';
import { openStore } from '../src/store/open.js';
import { startServer } from '../src/server/server.js';
import { createRegistrationToken } from '../src/server/auth.js';
import { startRunner, type RunningRunner } from '../src/runner/runner.js';
import { FlotillaClient } from '../src/client/client.js';
import type { Store } from '../src/store/types.js';
import type { Job, JobEvent } from '../src/protocol/index.js';

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
export const AGENTS_DIRS = [join(ROOT, 'agents'), join(ROOT, 'test', 'fixtures', 'agents')];
export const BIN = join(ROOT, 'bin', 'flotilla.js');

/** A fresh temp folder, removed by the returned cleanup. */
export function tempDir(prefix = 'flotilla-test-'): { path: string; cleanup: () => void } {
  const path = mkdtempSync(join(tmpdir(), prefix));
  return { path, cleanup: () => rmSync(path, { recursive: true, force: true }) };
}

export interface Plane {
  store: Store;
  url: string;
  adminToken: string;
  client: FlotillaClient;
  registrationToken(): Promise<string>;
  close(): Promise<void>;
}

/** Opens a store and starts a control plane on an ephemeral port (scripted model). */
export async function startPlane(opts: { dataDir: string; databaseUrl?: string; heartbeatIntervalMs?: number; heartbeatTimeoutMs?: number; sweepIntervalMs?: number; agentsDirs?: string[] }): Promise<Plane> {
  const store = await openStore({ dataDir: opts.dataDir, databaseUrl: opts.databaseUrl });
  const { loadGatewayConfig } = await import('../src/gateway/config.js');
  const server = await startServer({
    store,
    dataDir: opts.dataDir,
    port: 0,
    agentsDirs: [...AGENTS_DIRS, ...(opts.agentsDirs ?? [])],
    gateway: loadGatewayConfig({ ...process.env, ANTHROPIC_API_KEY: '' }),
    heartbeatIntervalMs: opts.heartbeatIntervalMs,
    heartbeatTimeoutMs: opts.heartbeatTimeoutMs,
    sweepIntervalMs: opts.sweepIntervalMs,
  });
  if (!server.adminToken) throw new Error('server did not report an admin token');
  const adminToken = server.adminToken;
  return {
    store,
    url: server.url,
    adminToken,
    client: new FlotillaClient({ url: server.url, token: adminToken }),
    registrationToken: () => createRegistrationToken(store, {}, 3_600_000, Date.now()),
    close: async () => {
      await server.close();
      await store.close();
    },
  };
}

/** Starts an in-process runner registered with the plane. */
export async function startLocalRunner(plane: { url: string; registrationToken(): Promise<string> }, workDir: string, opts: { graceMs?: number; capacity?: number } = {}) {
  return startRunner({
    serverUrl: plane.url,
    registrationToken: await plane.registrationToken(),
    workDir,
    name: 'test-runner',
    repoBaseDir: ROOT,
    graceMs: opts.graceMs ?? 3000,
    capacity: opts.capacity ?? 1,
  });
}

/** Options of {@link planeWithRunner}: what a file's shared plane and runner have particular. */
export interface PlaneWithRunnerOptions {
  /** Prefix of the temp folder's name (default `flotilla-test-`). */
  prefix?: string;
  /** Runs first in beforeAll, before anything starts (e.g. clear `FLOTILLA_*` from process.env). */
  before?: () => void | Promise<void>;
  /**
   * The store's database: resolves `{ url, drop }` (url undefined: SQLite in `<dir>/data`;
   * `drop` runs in afterAll after the plane closed), or null to start nothing and mark the
   * tests skipped (see {@link PlaneWithRunner.skipped}). Default: SQLite.
   */
  database?: () => Promise<{ url?: string; drop(): Promise<void> } | null>;
  /** Passed to {@link startPlane} (heartbeat and sweep periods, ms). */
  plane?: Omit<Parameters<typeof startPlane>[0], 'dataDir' | 'databaseUrl'>;
  /** Passed to {@link startLocalRunner} (graceMs, capacity). */
  runner?: Parameters<typeof startLocalRunner>[2];
  /** beforeAll's timeout, ms (default: the config's hookTimeout). */
  timeoutMs?: number;
}

/** What {@link planeWithRunner} returns: the temp folder at once, the rest once the tests start. */
export interface PlaneWithRunner {
  /** The temp folder (exists at once, removed in afterAll): the plane's data is `<dir>/data`. */
  dir: string;
  /** `<dir>/runner`: the runner's work folder (workspaces/, homes/). */
  runnerDir: string;
  /** The control plane (a stand-in given the started plane's fields in beforeAll). */
  plane: Plane;
  /** The runner, registered with `plane` as `test-runner` (a stand-in, likewise). */
  runner: RunningRunner;
  /** True when `database` resolved null: nothing started, the tests should `ctx.skip()`. */
  skipped(): boolean;
}

/**
 * One control plane and one local runner shared by the tests of the enclosing describe block
 * (or file): registers a beforeAll that starts the plane on `<dir>/data` and the runner on
 * `<dir>/runner`, and an afterAll that stops the runner, closes the plane, drops the database
 * and removes the folder. Call it at the top of the block; use `plane` and `runner` inside
 * tests and hooks only (they are filled when the tests start).
 * @throws (in beforeAll) whatever startPlane/startLocalRunner throw.
 */
export function planeWithRunner(opts: PlaneWithRunnerOptions = {}): PlaneWithRunner {
  const dir = tempDir(opts.prefix);
  const plane = {} as Plane;
  const runner = {} as RunningRunner;
  let db: { url?: string; drop(): Promise<void> } | null = null;
  let skipped = false;
  const set: PlaneWithRunner = { dir: dir.path, runnerDir: join(dir.path, 'runner'), plane, runner, skipped: () => skipped };
  beforeAll(async () => {
    await opts.before?.();
    db = opts.database ? await opts.database() : { drop: async () => {} };
    if (!db) {
      skipped = true;
      return;
    }
    Object.assign(plane, await startPlane({ ...opts.plane, dataDir: join(dir.path, 'data'), databaseUrl: db.url }));
    Object.assign(runner, await startLocalRunner(plane, set.runnerDir, opts.runner));
  }, opts.timeoutMs);
  afterAll(async () => {
    await runner.stop?.();
    await plane.close?.();
    await db?.drop();
    dir.cleanup();
  });
  return set;
}

/** Runs `flotilla <args>` as a child process (stdout/stderr collected). */
export function spawnFlotilla(args: string[], env: NodeJS.ProcessEnv = {}): ChildProcess & { output: () => string } {
  const child = spawn(process.execPath, [BIN, ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout?.on('data', (d) => (out += d));
  child.stderr?.on('data', (d) => (out += d));
  return Object.assign(child, { output: () => out });
}

/** Runs the built `flotilla <args>` to its end (env: this process's plus `env`): its exit code (-1 when killed), stdout and stderr apart. */
export function runFlotilla(args: string[], env: NodeJS.ProcessEnv = {}): Promise<{ code: number; out: string; err: string }> {
  const child = spawn(process.execPath, [BIN, ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (err += d));
  return new Promise((resolve) => child.on('close', (code) => resolve({ code: code ?? -1, out, err })));
}

/** Polls `fn` every `everyMs` until it returns a truthy value, or throws after `timeoutMs`. */
export async function waitFor<T>(what: string, fn: () => Promise<T | undefined | null | false> | T | undefined | null | false, timeoutMs = 30_000, everyMs = 100): Promise<T> {
  const start = Date.now();
  let last: unknown;
  while (Date.now() - start < timeoutMs) {
    try {
      const v = await fn();
      if (v) return v as T;
    } catch (e) {
      last = e;
    }
    await new Promise((r) => setTimeout(r, everyMs));
  }
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${last ? `: ${String(last)}` : ''}`);
}

/** Every stored event of a job, in order. */
export async function allEvents(store: Store, jobId: number): Promise<JobEvent[]> {
  return store.listEvents(jobId, 0, 10_000);
}

/**
 * Starts the `sleeper` test agent's job (a shell command sleeping `seconds`) on `plane` and waits
 * (up to 60 s) until its command runs: its tool call is recorded. Returns the job, its events so
 * far and its harness's pid (the process group's leader; 0 when not reported).
 */
export async function sleeperRunning(plane: Pick<Plane, 'client' | 'store'>, seconds: number): Promise<{ job: Job; events: JobEvent[]; pid: number }> {
  const job = await plane.client.createJob({ agent: 'sleeper', input: { seconds }, priority: 0 });
  const events = await waitFor('the sleep to start', async () => {
    const ev = await allEvents(plane.store, job.id);
    return ev.some((e) => e.type === 'tool.call') ? ev : null;
  }, 60_000);
  const started = events.find((e) => e.type === 'harness.started');
  return { job, events, pid: started?.type === 'harness.started' ? started.data.pid : 0 };
}

/** True while any process of group `pgid` exists. */
export function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}
