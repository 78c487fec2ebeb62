// The store work of one metered gateway call on SQLite (issue 3, speed goals): token lookup,
// budget reserve, settle with the ledger row. Baseline measured in the same run: the same
// Store methods through Kysely only (kysely-store.ts: a query compile + prepare per statement,
// transactions as BEGIN/COMMIT round trips, no token cache); against the store openStore gives
// (store/sqlite-fast.ts: prepared statements, token cache, and the writes of concurrent calls
// group-committed in one transaction per event-loop turn, store/sqlite-group-commit.ts).
// Prints µs of CPU per call (process.cpuUsage) and calls/s, one client and 64 concurrent.
// Usage: npx tsc -p tsconfig.build.json && node bench/gateway-store.bench.js [calls=4000]
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { Kysely, SqliteDialect } from 'kysely';
import { openStore } from '../dist/store/open.js';
import { kyselyStore } from '../dist/store/kysely-store.js';
import { migrateToLatest } from '../dist/store/migrations/index.js';
import { hashToken } from '../dist/core/tokens.js';

const CALLS = Number(process.argv[2] ?? 4000);
const dirs = [];

async function kyselyOnly() {
  const dir = mkdtempSync(join(tmpdir(), 'bench-gws-'));
  dirs.push(dir);
  const sqlite = new BetterSqlite3(join(dir, 'db.sqlite'));
  sqlite.pragma('journal_mode = WAL');
  sqlite.pragma('synchronous = NORMAL');
  sqlite.pragma('foreign_keys = ON');
  const db = new Kysely({ dialect: new SqliteDialect({ database: sqlite }) });
  await migrateToLatest(db, 'sqlite');
  return kyselyStore(db, 'sqlite');
}

async function fast() {
  const dir = mkdtempSync(join(tmpdir(), 'bench-gws-'));
  dirs.push(dir);
  return openStore({ dataDir: dir });
}

async function setup(store) {
  const now = Date.now();
  const runner = await store.createRunner({ name: 'b', labels: {}, capacity: 1, credentialHash: 'b'.repeat(64), now });
  await store.createJob({ parentId: null, agent: 'b', agentVersion: '1', input: {}, selector: {}, priority: 0, budgetMicros: 1e15, now });
  const hash = hashToken('flj_bench_store');
  await store.claimJob({ id: runner.id, labels: {} }, hash, now);
  return hash;
}

async function oneCall(store, hash) {
  const job = await store.findJobByTokenHash(hash);
  const now = Date.now();
  const r = await store.reserveBudget(job.rootId, 5_000, now);
  await store.settleBudget(job.rootId, r.reservationId, 1_234, now, {
    jobId: job.id, attempt: job.attempt, provider: 'anthropic', model: 'claude-haiku-4-5', api: 'anthropic-messages', streamed: false, httpStatus: 200,
    inputTokens: 12, outputTokens: 3, cacheReadTokens: 0, cacheWriteTokens: 0, usageKnown: true, costMicros: 1_234, runnerId: job.runnerId, startedAt: now, durationMs: 1,
  });
}

async function measure(store, hash, clients) {
  for (let i = 0; i < 200; i++) await oneCall(store, hash); // warm-up
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  let left = CALLS;
  await Promise.all(Array.from({ length: clients }, async () => {
    while (left-- > 0) await oneCall(store, hash);
  }));
  const secs = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(c0);
  return { usPerCall: (cpu.user + cpu.system) / CALLS, perSec: CALLS / secs };
}

const stores = { kysely: await kyselyOnly(), fast: await fast() };
const hashes = { kysely: await setup(stores.kysely), fast: await setup(stores.fast) };
console.log(`store work per metered call on SQLite (token lookup + reserve + settle with ledger row), ${CALLS} calls`);
console.log('clients | kysely-only µs-cpu/call calls/s | fast µs-cpu/call calls/s | cpu ratio');
for (const c of [1, 64]) {
  const k = await measure(stores.kysely, hashes.kysely, c);
  const f = await measure(stores.fast, hashes.fast, c);
  console.log(`${String(c).padStart(7)} | ${k.usPerCall.toFixed(0)} ${k.perSec.toFixed(0)} | ${f.usPerCall.toFixed(0)} ${f.perSec.toFixed(0)} | ${(k.usPerCall / f.usPerCall).toFixed(1)}×`);
}
await stores.kysely.close();
await stores.fast.close();
dirs.forEach((d) => rmSync(d, { recursive: true, force: true }));
