// Dispatch (issue 5), on SQLite and on PostgreSQL, with graphile-worker 0.17 on the same
// PostgreSQL server as the baseline, all measured in this run:
// 1. latency: `POST /api/jobs` → the runner receiving `job.assign`, 100 idle simulated runners
//    (real WebSockets), jobs one at a time; p50 / p99 after 200 untimed jobs (a long-running
//    server is warm). The client and the runners run in a worker thread
//    (bench/dispatch/latency.js; the POST over a raw keep-alive connection), as they are other
//    processes elsewhere. Baseline: graphile-worker addJob → task handler start, one at a
//    time, after the same 200 untimed jobs.
// 2. throughput: a claim-run-complete loop of no-op jobs with 50 runners (each finishes its job
//    at once: harness.started + job.finished); jobs/s to drain a pre-filled queue. Baseline:
//    graphile-worker, concurrency 50, draining the same number of no-op jobs. The 50 simulated
//    runners run in a worker thread (bench/dispatch/runners.js): real runners are other
//    processes on other machines, so the server's thread should not pay for the simulation.
//    They are registered before the clock starts; the clock (jobs/s, CPU) starts once every
//    runner is connected (WebSocket handshakes and hellos are not in the window, as
//    graphile-worker's clock starts at its first job) and BENCH_TPUT_WARMUP jobs have gone
//    through the loop untimed (both sides: a long-running server's code is warm; cold, V8's
//    compiler threads cost ~120 µs of CPU per job over the first 2,000): jobs done after that /
//    time after that.
//    The ratio to graphile-worker counts both sides alike: graphile-worker's count ends at its
//    last handler's start (before that job is completed in the database), so ours ends at the
//    last job's start too (its job.assign reaching the runner); the rate to the last completion
//    in the store (seen by a 50 ms poll) is printed beside it.
//    CPU µs per job: of the server's (main) thread alone (/proc/self/task/<pid>/stat, Linux:
//    less sensitive to other load on the machine than wall-clock rates), of the whole process
//    (process.cpuUsage: server + runners' thread + GC threads), and of the PostgreSQL backends
//    of the bench's database (/proc/<pid>/stat of the pg_stat_activity pids; a backend that
//    appears during the window counts from 0, one that exits loses its CPU). graphile-worker's
//    figure is its whole process (its task handlers run in it, as they would in production)
//    plus its database's backends, from its first job. "Total" = server thread (ours) or
//    process (graphile-worker) + PostgreSQL backends: the CPU the 2 cores spend per job.
// 3. server RSS with 1,000 and 10,000 idle connected runners (server in a child process).
// Environment: BENCH_PG_URL (default postgres://postgres@127.0.0.1:5432/postgres),
// BENCH_JOBS (throughput jobs, default 2000), BENCH_TPUT_WARMUP (untimed jobs through the same
// loop before them, each side: JIT warm-up, default 1000), BENCH_LATENCY (samples, default 200),
// BENCH_IDLE (comma list of idle fleet sizes, default 1000,10000), BENCH_PROFILE=DIR (a CPU
// profile of the server thread over the throughput loop once every runner is connected,
// bench/lib/profile.js).
import { fork } from 'node:child_process';
import { setInterval, clearInterval } from 'node:timers';
import { mkdtempSync, rmSync, mkdirSync, writeFileSync, readFileSync } from 'node:fs';
import { Worker } from 'node:worker_threads';
import { tmpdir } from 'node:os';
import { join, dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import WebSocket from 'ws';
import { run as graphileRun } from 'graphile-worker';
import BetterSqlite3 from 'better-sqlite3';
import { openStore } from '../dist/store/open.js';
import { PreparingClient } from '../dist/store/pg-prepared.js';
import { startServer } from '../dist/server/server.js';
import { createRegistrationToken } from '../dist/server/auth.js';
import { startProfile } from './lib/profile.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const PG_BASE = process.env.BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const JOBS = Number(process.env.BENCH_JOBS ?? 2000);
/**
 * Untimed jobs through each side's throughput loop before its JOBS timed ones: a long-running
 * server is warm (cold, V8's compiler threads took ~120 µs of CPU per job beside the loop over
 * the first 2,000 jobs, on both sides).
 */
const TPUT_WARMUP = Number(process.env.BENCH_TPUT_WARMUP ?? 1000);
const SAMPLES = Number(process.env.BENCH_LATENCY ?? 200);
/** Untimed jobs before the latency samples, on both sides (JIT warm-up: a long-running server is warm). */
const LATENCY_WARMUP = 200;
const IDLE = (process.env.BENCH_IDLE ?? '1000,10000').split(',').map(Number).filter((n) => n > 0);
const isChild = process.argv[2] === '--idle-server';

// Statements this process sends to the database (PostgreSQL: Client#query calls, each one
// round trip, on the store's client class too; SQLite: prepared-statement runs), for
// statements per job in the throughput loop.
// BENCH_SQL_LOG=1: also count each statement's text, printed after the throughput loop.
const stmts = { n: 0, texts: process.env.BENCH_SQL_LOG ? new Map() : null };
{
  for (const proto of [pg.Client.prototype, PreparingClient.prototype]) {
    if (!Object.hasOwn(proto, 'query')) continue;
    const q = proto.query;
    proto.query = function (...a) {
      stmts.n++;
      if (stmts.texts) {
        const text = String(typeof a[0] === 'string' ? a[0] : a[0]?.text ?? '?').replace(/\s+/g, ' ').slice(0, 160);
        stmts.texts.set(text, (stmts.texts.get(text) ?? 0) + 1);
      }
      return q.apply(this, a);
    };
  }
  const probe = new BetterSqlite3(':memory:');
  const proto = Object.getPrototypeOf(probe.prepare('select 1'));
  for (const m of ['run', 'get', 'all', 'iterate']) {
    const f = proto[m];
    proto[m] = function (...a) {
      stmts.n++;
      return f.apply(this, a);
    };
  }
  probe.close();
}

const pct = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
};
const f1 = (x) => x.toFixed(1);
const us = (x) => (x === null ? 'n/a' : x.toFixed(0));
const at = () => new Date().toISOString();

function agentsDir() {
  const dir = mkdtempSync(join(tmpdir(), 'bench-dispatch-agents-'));
  mkdirSync(join(dir, 'noop'));
  writeFileSync(join(dir, 'noop', 'agent.yaml'), 'name: noop\nharness: command\ncommand: ["true"]\n');
  writeFileSync(join(dir, 'noop', 'prompt.md'), 'noop');
  return dir;
}
const GATEWAY = { provider: 'scripted', anthropicBaseUrl: 'http://127.0.0.1:9', prices: { version: 'b', models: {}, default: { input: 3, output: 15, cacheWrite5m: 3.75, cacheWrite1h: 6, cacheRead: 0.3 } } };

async function freshPg(name) {
  const c = new pg.Client({ connectionString: PG_BASE });
  await c.connect();
  await c.query(`DROP DATABASE IF EXISTS ${name}`);
  await c.query(`CREATE DATABASE ${name}`);
  await c.end();
  const u = new URL(PG_BASE);
  u.pathname = `/${name}`;
  return u.toString();
}
async function dropPg(name) {
  const c = new pg.Client({ connectionString: PG_BASE });
  await c.connect();
  await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  await c.end();
}

/** A control plane over a fresh store of `engine`. */
async function plane(engine, tag, extra = {}) {
  const dataDir = mkdtempSync(join(tmpdir(), `bench-dispatch-${tag}-`));
  const dbName = `flotilla_bench_${tag}_${process.pid}`;
  const databaseUrl = engine === 'postgres' ? await freshPg(dbName) : undefined;
  const store = await openStore({ dataDir: join(dataDir, 'db'), ...(databaseUrl ? { databaseUrl } : {}) });
  const agents = agentsDir();
  const server = await startServer({ store, dataDir, port: 0, agentsDirs: [agents], gateway: GATEWAY, heartbeatTimeoutMs: 600_000, dispatchIntervalMs: 1000, ...extra });
  return {
    store,
    server,
    databaseUrl,
    async close() {
      await server.close();
      await store.close();
      rmSync(dataDir, { recursive: true, force: true });
      rmSync(agents, { recursive: true, force: true });
      if (databaseUrl) await dropPg(dbName);
    },
  };
}

async function registerRunner(url, store, name, labels = {}) {
  const token = await createRegistrationToken(store, labels, 600_000, Date.now());
  const res = await fetch(`${url}/api/runners/register`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ token, name, capacity: 1 }) });
  if (res.status !== 201) throw new Error(`register: ${res.status} ${await res.text()}`);
  return res.json();
}

/** A simulated runner: hello, then for each job.assign calls onAssign and completes the job at once (if `complete`). */
function connectRunner(url, credential, name, { onAssign = () => {}, complete = true } = {}) {
  return new Promise((resolveConn, reject) => {
    const ws = new WebSocket(url.replace(/^http/, 'ws') + '/api/runners/connect', { headers: { authorization: `Bearer ${credential}` }, perMessageDeflate: false });
    ws.on('error', reject);
    ws.on('open', () => ws.send(JSON.stringify({ type: 'hello', name, labels: {}, capacity: 1, version: 'bench', running: [] })));
    ws.on('message', (data) => {
      const f = JSON.parse(data.toString());
      if (f.type === 'welcome') return resolveConn(ws);
      if (f.type !== 'job.assign') return;
      const a = f.assignment;
      onAssign(a);
      if (!complete) return;
      ws.send(
        JSON.stringify({
          type: 'job.events',
          jobId: a.jobId,
          attempt: a.attempt,
          events: [
            { rseq: 1, at: at(), type: 'harness.started', data: { harness: 'command', pid: 1 } },
            { rseq: 2, at: at(), type: 'job.finished', data: { status: 'succeeded' } },
          ],
        }),
      );
    });
  });
}

async function latency(engine) {
  const p = await plane(engine, `lat_${engine}`);
  const runners = [];
  for (let i = 0; i < 100; i++) {
    const { credential } = await registerRunner(p.server.url, p.store, `l${i}`);
    runners.push({ credential, name: `l${i}` });
  }
  // The API client and the runners in a worker thread (bench/dispatch/latency.js): in this
  // thread their fetch() and WebSocket parsing sat on the measured path and took the server's CPU.
  const worker = new Worker(new URL('./dispatch/latency.js', import.meta.url), { workerData: { url: p.server.url, admin: p.server.adminToken, runners, samples: SAMPLES, warmup: LATENCY_WARMUP } });
  // Robust to a busy machine, unlike the latencies: SQL statements and server-thread CPU per job
  // over the timed samples (from the worker's `warm` message).
  let before = null;
  let prof = null;
  const r = await new Promise((resolve, reject) => {
    worker.on('message', (m) => {
      if (!m.warm) return resolve(m);
      before = { stmts: stmts.n, main: procCpuUs(`self/task/${process.pid}`) };
      void startProfile().then((x) => (prof = x));
    });
    worker.once('error', reject);
  });
  await prof?.stop(`latency-${engine}`);
  const jobs = SAMPLES;
  const main = procCpuUs(`self/task/${process.pid}`);
  await worker.terminate();
  await p.close();
  return { ...r, stmtsPerJob: (stmts.n - before.stmts) / jobs, serverUsPerJob: main === null || before.main === null ? null : (main - before.main) / jobs };
}

/** CPU µs a /proc stat file says its task spent (user + system; `part` 'system': system only), or null (not Linux). */
function procCpuUs(which, part) {
  try {
    const f = readFileSync(`/proc/${which}/stat`, 'utf8').split(') ')[1].split(' ');
    const ticks = part === 'system' ? Number(f[12]) : Number(f[11]) + Number(f[12]);
    return ticks * (1_000_000 / 100); // fields 14 and 15, clock ticks (100/s)
  } catch {
    return null;
  }
}

/**
 * CPU µs so far of each PostgreSQL backend of `client`'s database (pid → µs), except
 * `client`'s own, with whatever else `extra` (SQL returning one row) selects in the same round
 * trip (its row is returned as `row`). Null pids map when /proc is not readable.
 */
async function pgCpuNow(client, extra = 'select 1 as one') {
  const { rows } = await client.query(
    `select array(select pid from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()) as pids, x.* from (${extra}) as x`,
  );
  const { pids, ...row } = rows[0];
  const us = new Map();
  for (const pid of pids) {
    const t = procCpuUs(String(pid));
    if (t === null) return { us: null, row };
    us.set(pid, t);
  }
  return { us, row };
}

/** PostgreSQL backends' CPU µs between two {@link pgCpuNow} readings (a backend new in `b` counts from 0), or null. */
function pgCpuSince(a, b) {
  if (!a.us || !b.us) return null;
  let sum = 0;
  for (const [pid, us] of b.us) sum += us - (a.us.get(pid) ?? 0);
  return sum;
}

async function throughput(engine) {
  const p = await plane(engine, `tput_${engine}`);
  for (let i = 0; i < TPUT_WARMUP + JOBS; i++) {
    await p.store.createJob({ parentId: null, agent: 'noop', agentVersion: '1', input: {}, selector: {}, priority: 0, budgetMicros: 1_000_000, now: Date.now() });
  }
  // Registration (an admin's one-time step per runner) is done before the clock starts; the
  // runners connect (hello) inside the measured window, from the worker thread.
  const runners = [];
  for (let i = 0; i < 50; i++) {
    const { credential } = await registerRunner(p.server.url, p.store, `t${i}`);
    runners.push({ credential, name: `t${i}` });
  }
  let finish;
  const all = new Promise((r) => (finish = r));
  const worker = new Worker(new URL('./dispatch/runners.js', import.meta.url), { workerData: { url: p.server.url, runners, jobs: TPUT_WARMUP + JOBS, warm: Math.max(1, TPUT_WARMUP) } });
  worker.on('error', (e) => {
    console.error(e);
    process.exit(1);
  });
  await new Promise((r) => worker.once('online', r));
  // PostgreSQL: the bench's own connection reads the backends' pids (and the jobs left) in one
  // round trip; its backend is not counted.
  const mon = p.databaseUrl ? new pg.Client({ connectionString: p.databaseUrl }) : null;
  await mon?.connect();
  const LEFT = `select count(*)::int as left from jobs where status in ('queued', 'assigned', 'running', 'cancelling')`;
  const snap = async () => {
    const pgNow = mon ? await pgCpuNow(mon, LEFT) : null;
    const left = pgNow ? pgNow.row.left : (await p.store.countQueuedJobs()) + (await p.store.listActiveAssignments()).length;
    return { pg: pgNow, done: TPUT_WARMUP + JOBS - left, t: performance.now(), cpu: process.cpuUsage(), main: procCpuUs(`self/task/${process.pid}`), mainSys: procCpuUs(`self/task/${process.pid}`, 'system'), stmts: stmts.n };
  };
  // The runners connect at once; every completion frees a slot for the next claim.
  const connected = new Promise((r) => worker.once('message', r));
  // The measured window starts once the warm-up jobs have started (TPUT_WARMUP).
  const warm = new Promise((r) => worker.on('message', (m) => m?.type === 'warm' && r(m)));
  // The last job's start (its job.assign reached its runner), as graphile-worker's side counts.
  const allStarted = new Promise((r) => worker.on('message', (m) => m?.type === 'allAssigned' && r(performance.now())));
  const tGo = performance.now();
  worker.postMessage('go');
  // Progress: on PostgreSQL through the bench's own connection (one statement, its backend not
  // counted: the poll is the bench's work, not the server's), on SQLite through the store.
  const poll = setInterval(async () => {
    const left = mon ? (await mon.query(LEFT)).rows[0].left : (await p.store.countQueuedJobs()) + (await p.store.listActiveAssignments()).length;
    if (left === 0) finish();
  }, 50);
  await connected;
  const connectMs = performance.now() - tGo;
  const { assigned: startedBefore } = await warm;
  const tConnected = performance.now();
  // The clock starts here: every runner is connected and the warm-up jobs have started (jobs done by now count out).
  const a = await snap();
  const profiler = await startProfile();
  const tLastStart = await allStarted;
  await all;
  clearInterval(poll);
  const b = await snap(); // before the profile is written: that is no part of the loop
  if (stmts.texts) for (const [text, n] of [...stmts.texts].sort((x, y) => y[1] - x[1]).slice(0, 25)) console.error(String(n).padStart(7), text);
  await profiler?.stop(`dispatch-${engine}`);
  await mon?.end();
  const n = b.done - a.done;
  const secs = (b.t - a.t) / 1000;
  const pgUs = a.pg && b.pg ? pgCpuSince(a.pg, b.pg) : null;
  worker.postMessage('stop');
  await new Promise((r) => worker.once('message', r));
  await worker.terminate();
  await p.close();
  // Statements include the bench's 50 ms progress polls (1 each on PostgreSQL, 2 on SQLite).
  const serverUsPerJob = a.main === null || b.main === null ? null : (b.main - a.main) / n;
  const pgUsPerJob = pgUs === null ? null : pgUs / n;
  return {
    jobsPerSec: n / secs,
    // Counted as graphile-worker's side is (its handler's start, not the job's completion in the
    // store): from every runner connected to the last job's start, jobs started meanwhile.
    startedPerSec: (TPUT_WARMUP + JOBS - startedBefore) / ((tLastStart - tConnected) / 1000),
    jobs: n,
    connectMs,
    cpuUsPerJob: (b.cpu.user + b.cpu.system - a.cpu.user - a.cpu.system) / n,
    serverUsPerJob,
    serverSystemUsPerJob: a.mainSys === null || b.mainSys === null ? null : (b.mainSys - a.mainSys) / n,
    pgUsPerJob,
    totalUsPerJob: serverUsPerJob === null || pgUsPerJob === null ? null : serverUsPerJob + pgUsPerJob,
    stmtsPerJob: (b.stmts - a.stmts) / n,
  };
}

async function graphile() {
  const dbName = `graphile_bench_${process.pid}`;
  const connectionString = await freshPg(dbName);
  // Throughput: pre-fill, then one worker, concurrency 50, drain.
  const client = new pg.Client({ connectionString });
  await client.connect();
  const { runMigrations } = await import('graphile-worker');
  await runMigrations({ connectionString, logger: quietLogger() });
  await client.query(`select graphile_worker.add_jobs(array(select json_populate_record(null::graphile_worker.job_spec, json_build_object('identifier','noop','payload','{}'::json)) from generate_series(1, ${TPUT_WARMUP + JOBS})))`);
  let done = 0;
  let drained;
  let first = 0;
  let c0 = null;
  // PostgreSQL backends' CPU from the first job: read when the first job starts (one round
  // trip later; the jobs done by then count out of the per-job figure).
  let pg0 = null;
  const mon = new pg.Client({ connectionString });
  await mon.connect();
  const finished = new Promise((r) => (drained = r));
  // graphile-worker's own pools end without being awaited and drop their error handlers first: a
  // connection still open when the database is dropped (WITH (FORCE)) crashed the bench with an
  // unhandled 'error'. Pools of its default size (10) owned here, ended before the drop.
  const pools = [];
  const pgPool = () => {
    const pool = new pg.Pool({ connectionString, max: 10 });
    pool.on('error', () => undefined);
    pool.on('connect', (c) => c.on('error', () => undefined));
    pools.push(pool);
    return pool;
  };
  const runner = await graphileRun({
    pgPool: pgPool(),
    concurrency: 50,
    noHandleSignals: true,
    pollInterval: 1000,
    logger: quietLogger(),
    taskList: {
      noop: async () => {
        // the clock starts at the first job after the warm-up ones
        if (done === TPUT_WARMUP) {
          first = performance.now();
          c0 = process.cpuUsage();
          pg0 = pgCpuNow(mon).then((x) => ({ ...x, done }));
        }
        if (++done === TPUT_WARMUP + JOBS) drained();
      },
    },
  });
  await finished;
  const secs = (performance.now() - first) / 1000;
  const cpu = process.cpuUsage(c0);
  const pgA = await pg0;
  const pgB = await pgCpuNow(mon);
  const pgUs = pgCpuSince(pgA, pgB);
  await mon.end();
  await runner.stop();
  // Latency: addJob → handler start, one at a time.
  const starts = new Map();
  const lat = await graphileRun({
    pgPool: pgPool(),
    concurrency: 10,
    noHandleSignals: true,
    pollInterval: 1000,
    logger: quietLogger(),
    taskList: { probe: async (payload) => starts.get(payload.i)?.(performance.now()) },
  });
  const xs = [];
  for (let i = 0; i < SAMPLES + LATENCY_WARMUP; i++) {
    let got;
    const started = new Promise((r) => (got = r));
    starts.set(i, got);
    const t = performance.now();
    await lat.addJob('probe', { i });
    const t1 = await started;
    if (i >= LATENCY_WARMUP) xs.push(t1 - t);
  }
  await lat.stop();
  await client.end();
  await Promise.all(pools.map((pool) => pool.end()));
  graphileTeardown = true; // its connections still open are ended by the drop: not errors worth printing
  await dropPg(dbName);
  graphileTeardown = false;
  const cpuUsPerJob = (cpu.user + cpu.system) / JOBS;
  const pgUsPerJob = pgUs === null ? null : pgUs / (TPUT_WARMUP + JOBS - pgA.done);
  return { jobsPerSec: JOBS / secs, cpuUsPerJob, pgUsPerJob, totalUsPerJob: pgUsPerJob === null ? null : cpuUsPerJob + pgUsPerJob, p50: pct(xs, 50), p99: pct(xs, 99) };
}

/** Set while the graphile-worker database is dropped. */
let graphileTeardown = false;

function quietLogger() {
  // graphile-worker's Logger wants a factory; keep errors only.
  return {
    scope: () => quietLogger(),
    debug() {},
    info() {},
    warn() {},
    error: (m) => graphileTeardown || console.error('graphile-worker:', m),
  };
}

/** Child process: a server over SQLite, reports its RSS on request. */
async function idleServerChild() {
  const p = await plane('sqlite', 'idle');
  process.send({ url: p.server.url, admin: p.server.adminToken });
  process.on('message', async (m) => {
    if (m === 'token') {
      // Registration tokens in bulk for the parent.
      const tokens = [];
      for (let i = 0; i < 500; i++) tokens.push(await createRegistrationToken(p.store, {}, 600_000, Date.now()));
      process.send({ tokens });
    } else if (m === 'rss') {
      globalThis.gc?.();
      process.send({ rss: process.memoryUsage().rss });
    } else if (m === 'stop') {
      await p.close();
      process.exit(0);
    }
  });
}

async function idleRss(n) {
  const child = fork(fileURLToPath(import.meta.url), ['--idle-server'], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const next = () => new Promise((r) => child.once('message', r));
  const { url } = await next();
  child.send('rss');
  const base = (await next()).rss;
  const sockets = [];
  let tokens = [];
  for (let i = 0; i < n; i++) {
    if (tokens.length === 0) {
      child.send('token');
      tokens = (await next()).tokens;
    }
    const token = tokens.pop();
    const res = await fetch(`${url}/api/runners/register`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ token, name: `i${i}`, capacity: 1 }) });
    const { credential } = await res.json();
    sockets.push(await connectRunner(url, credential, `i${i}`, { complete: false }));
  }
  await new Promise((r) => setTimeout(r, 1000));
  child.send('rss');
  const rss = (await next()).rss;
  for (const s of sockets) s.terminate();
  child.send('stop');
  await new Promise((r) => child.once('exit', r));
  return { base, rss };
}

async function main() {
  const mb = (b) => `${(b / 1024 / 1024).toFixed(0)} MiB`;
  const g = await graphile();
  console.log(
    `graphile-worker 0.17 (same PostgreSQL): ${f1(g.jobsPerSec)} jobs/s, ${g.cpuUsPerJob.toFixed(0)} µs CPU/job in its process + ${us(g.pgUsPerJob)} µs in PostgreSQL backends = ${us(g.totalUsPerJob)} µs total (concurrency 50, ${JOBS} no-op jobs after ${TPUT_WARMUP} untimed ones); addJob→start p50 ${f1(g.p50)} ms, p99 ${f1(g.p99)} ms`,
  );
  for (const engine of ['sqlite', 'postgres']) {
    const l = await latency(engine);
    console.log(`${engine}: POST /api/jobs → runner has job.assign, 100 idle runners: p50 ${f1(l.p50)} ms, p99 ${f1(l.p99)} ms (goal 5 / 25); vs graphile-worker p50 ×${(l.p50 / g.p50).toFixed(2)}, p99 ×${(l.p99 / g.p99).toFixed(2)}; per job ${l.stmtsPerJob.toFixed(1)} SQL statements, server thread ${us(l.serverUsPerJob)} µs CPU (POST, dispatch, the runner's finish)`);
    const t = await throughput(engine);
    console.log(
      `${engine}: claim-run-complete, 50 runners, ${t.jobs} of ${JOBS} no-op jobs after all connected (${t.connectMs.toFixed(0)} ms) and ${TPUT_WARMUP} untimed ones: ${f1(t.startedPerSec)} jobs started/s (counted as graphile-worker's: to the last job's start; ${f1(t.jobsPerSec)}/s to the last one's completion in the store, seen by a 50 ms poll), server thread ${us(t.serverUsPerJob)} µs CPU/job (${us(t.serverSystemUsPerJob)} of it in the kernel; ${t.cpuUsPerJob.toFixed(0)} µs with the runners' worker thread and GC threads)${t.pgUsPerJob === null ? '' : ` + ${us(t.pgUsPerJob)} µs in PostgreSQL backends = ${us(t.totalUsPerJob)} µs total`}, ${t.stmtsPerJob.toFixed(1)} SQL statements/job; vs graphile-worker ×${(t.startedPerSec / g.jobsPerSec).toFixed(2)} (×${(t.jobsPerSec / g.jobsPerSec).toFixed(2)} to completion), CPU/job ×${((t.serverUsPerJob ?? t.cpuUsPerJob) / g.cpuUsPerJob).toFixed(2)} (server thread vs its process)${t.totalUsPerJob === null || g.totalUsPerJob === null ? '' : `, total CPU/job ×${(t.totalUsPerJob / g.totalUsPerJob).toFixed(2)} (+ PostgreSQL, each side)`}`,
    );
  }
  for (const n of IDLE) {
    const r = await idleRss(n);
    console.log(`server RSS with ${n} idle connected runners: ${mb(r.rss)} (empty server ${mb(r.base)}; goal 10,000 under 1 GiB)`);
  }
}

if (isChild) await idleServerChild();
else if (process.env.BENCH_ONLY === 'tput') console.log(await throughput(process.env.BENCH_ENGINE ?? 'sqlite'));
else if (process.env.BENCH_ONLY === 'graphile') console.log(await graphile());
else if (process.env.BENCH_ONLY === 'latency') console.log(await latency(process.env.BENCH_ENGINE ?? 'sqlite'));
else await main();
void ROOT;
