// Webhook intake (issue 7), on SQLite and on PostgreSQL: signed GitHub `issue_comment`
// deliveries POSTed to /hooks/github/:receiver with verification (HMAC-SHA256 on the raw
// body), dedup (unique delivery id) and coalescing on (100 tasks, one per issue, 180 s window:
// the first comment per issue wakes its task, the rest are recorded for the trailing wake),
// 32 in flight. Reports deliveries/s and p50/p99 response time, and as the baseline measured
// in the same run the same server's GET /healthz (no auth, no store write) at the same
// concurrency. Goal (issue 7): ≥ 2,000/s on PostgreSQL, p99 < 20 ms.
// On PostgreSQL it also prints transactions committed per delivery (pg_stat_database.xact_commit;
// concurrent deliveries share one commit through the server's ingest batcher).
// Environment: BENCH_PG_URL (default postgres://postgres@127.0.0.1:5432/postgres),
// BENCH_DELIVERIES (default 4000), BENCH_CONCURRENCY (default 32). Needs dist/ (npm run build).
import { mkdtempSync, rmSync, mkdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createHmac, randomUUID } from 'node:crypto';
import pg from 'pg';
import { openStore } from '../dist/store/open.js';
import { startServer } from '../dist/server/server.js';

const PG_BASE = process.env.BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const N = Number(process.env.BENCH_DELIVERIES ?? 4000);
const CONC = Number(process.env.BENCH_CONCURRENCY ?? 32);
const ISSUES = 100;
const GATEWAY = { provider: 'scripted', anthropicBaseUrl: 'http://127.0.0.1:9', prices: { version: 'b', models: {}, default: { input: 3, output: 15, cacheWrite5m: 3.75, cacheWrite1h: 6, cacheRead: 0.3 } } };
const pct = (xs, p) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))];

async function pgUrl(name, drop) {
  const c = new pg.Client({ connectionString: PG_BASE });
  await c.connect();
  await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  if (!drop) await c.query(`CREATE DATABASE ${name}`);
  await c.end();
  const u = new URL(PG_BASE);
  u.pathname = `/${name}`;
  return u.toString();
}

/** Runs `n` requests made by `make(i)`, `CONC` in flight; returns per-second rate and latencies (ms). */
async function load(n, make) {
  const lat = [];
  let next = 0;
  let bad = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: CONC }, async () => {
      while (next < n) {
        const i = next++;
        const { url, init } = make(i);
        const s = performance.now();
        const res = await fetch(url, init);
        await res.arrayBuffer();
        lat.push(performance.now() - s);
        if (res.status !== 200) bad++;
      }
    }),
  );
  const secs = (performance.now() - t0) / 1000;
  return { rate: n / secs, p50: pct(lat, 50), p99: pct(lat, 99), bad };
}

async function bench(engine) {
  const dataDir = mkdtempSync(join(tmpdir(), `bench-hooks-${engine}-`));
  const db = `flotilla_bench_hooks_${process.pid}`;
  const databaseUrl = engine === 'postgres' ? await pgUrl(db) : undefined;
  const agents = join(dataDir, 'agents');
  mkdirSync(join(agents, 'noop'), { recursive: true });
  writeFileSync(join(agents, 'noop', 'agent.yaml'), 'name: noop\nharness: command\ncommand: ["true"]\nrunnerLabels: { bench: none }\n');
  writeFileSync(join(agents, 'noop', 'prompt.md'), '{{input.taskPrompt}}');
  const store = await openStore({ dataDir: join(dataDir, 'db'), ...(databaseUrl ? { databaseUrl } : {}) });
  const server = await startServer({ store, dataDir, port: 0, agentsDirs: [agents], gateway: GATEWAY });
  try {
    const api = (path, body) => fetch(server.url + path, { method: 'POST', headers: { authorization: `Bearer ${server.adminToken}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
    const rec = await (await api('/api/receivers', { name: 'bench', provider: 'github' })).json();
    for (let i = 0; i < ISSUES; i++) await api('/api/tasks', { agent: 'noop', keys: [`github.com/acme/api/issues/${i}`], coalesceSeconds: 180 });
    const hookUrl = `${server.url}/hooks/github/bench`;
    const delivery = (i) => {
      const raw = JSON.stringify({ action: 'created', issue: { number: i % ISSUES, title: 't', html_url: `https://github.com/acme/api/issues/${i % ISSUES}` }, comment: { body: `comment ${i} é \u001b`, created_at: new Date(Date.now() + i).toISOString() }, sender: { login: 'octocat' } });
      const sig = `sha256=${createHmac('sha256', rec.secret).update(raw).digest('hex')}`;
      return { url: hookUrl, init: { method: 'POST', headers: { 'content-type': 'application/json', 'x-github-event': 'issue_comment', 'x-github-delivery': randomUUID(), 'x-hub-signature-256': sig }, body: raw } };
    };
    await load(200, () => ({ url: `${server.url}/healthz`, init: {} })); // warm-up
    await load(200, (i) => delivery(N + i));
    const base = await load(N, () => ({ url: `${server.url}/healthz`, init: {} }));
    const commits = async () => {
      if (!databaseUrl) return 0;
      await new Promise((r) => setTimeout(r, 1500)); // PostgreSQL flushes backend stats about once a second
      const c = new pg.Client({ connectionString: databaseUrl });
      await c.connect();
      const { rows } = await c.query('SELECT xact_commit::bigint AS n FROM pg_stat_database WHERE datname = current_database()');
      await c.end();
      return Number(rows[0].n);
    };
    const c0 = await commits();
    const hooks = await load(N, delivery);
    const perDelivery = databaseUrl ? ` | PostgreSQL commits per delivery: ${((await commits()) - c0 - 1) / N}`.replace(/(\.\d{2})\d+/, '$1') : '';
    const dup = await load(Math.min(N, 1000), (() => { const d = delivery(0); return () => d; })());
    console.log(
      `${engine.padEnd(8)} deliveries: ${hooks.rate.toFixed(0)}/s p50 ${hooks.p50.toFixed(1)} ms p99 ${hooks.p99.toFixed(1)} ms (non-200: ${hooks.bad}) | ` +
        `baseline GET /healthz: ${base.rate.toFixed(0)}/s p99 ${base.p99.toFixed(1)} ms | ratio ${(hooks.rate / base.rate).toFixed(2)}× of baseline | ` +
        `repeated delivery (dedup): ${dup.rate.toFixed(0)}/s p99 ${dup.p99.toFixed(1)} ms${perDelivery}`,
    );
    return hooks;
  } finally {
    await server.close();
    await store.close();
    rmSync(dataDir, { recursive: true, force: true });
    if (databaseUrl) await pgUrl(db, true);
  }
}

console.log(`webhook intake: ${N} signed deliveries, ${CONC} in flight, ${ISSUES} tasks (180 s coalescing)`);
await bench('sqlite');
let reachable = true;
try {
  const c = new pg.Client({ connectionString: PG_BASE, connectionTimeoutMillis: 2000 });
  await c.connect();
  await c.end();
} catch {
  reachable = false;
  console.log(`postgres: skipped (${PG_BASE} unreachable)`);
}
if (reachable) {
  const r = await bench('postgres');
  console.log(`goal (PostgreSQL ≥ 2000/s, p99 < 20 ms): ${r.rate >= 2000 && r.p99 < 20 ? 'met' : 'NOT met'}`);
}
