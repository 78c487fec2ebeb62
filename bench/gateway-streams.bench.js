// Streamed calls through the gateway (issue 3's streaming goal: ≤ 2 ms added to the first event at
// 1 and 64 concurrent streams, the upstream's pacing kept). The fake upstream
// (bench/gateway/upstream.js) sends 20 SSE events 5 ms apart; targets, each its own process:
// `direct` (the upstream), `bare` (bench/gateway/passthrough.js, the floor: node:http's client
// piped), `bare-undici` (the same over undici's dispatcher, the gateway's client) and one Flotilla
// gateway per build root (metering, budgets, key masking on; bench/gateway/gateway.js).
// 1. CPU µs per streamed call in each proxy process (process.cpuUsage over SIGUSR2), at 1 and
//    64 concurrent streams: robust to a noisy machine.
// 2. Wall clock (skip with BENCH_WALL=0; hold the lock: `flock /tmp/flot/bench.lock ...`): at 1
//    and 64 streams for BENCH_SECONDS (default 3) per target, interleaved: time to first event
//    (median), added over direct, and the mean gap between events (5 ms upstream).
// Usage (after `npx tsc -p tsconfig.build.json`):
//   BENCH_ROOTS=/tmp/base,/work/main BENCH_STREAMS=200 node bench/gateway-streams.bench.js
// BENCH_ROOTS: build roots (each with bench/gateway/gateway.js and dist/), default this one.
// BENCH_ROUNDS=R: the wall-clock cases R times over (the rounds vary on a noisy machine).
// BENCH_LEVELS=64: only that concurrency (default 1,64). BENCH_PROFILE=<dir>: the proxies write CPU profiles in <dir>/gw<i>/ and <dir>/bare/ (node --cpu-prof) when done.
import http from 'node:http';
import { Buffer } from 'node:buffer';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startChild } from './lib/child.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const ROOTS = (process.env.BENCH_ROOTS ?? ROOT).split(',');
const SECONDS = Number(process.env.BENCH_SECONDS ?? 3);
const N = Number(process.env.BENCH_STREAMS ?? 200);
const PROFILE = process.env.BENCH_PROFILE;
const LEVELS = (process.env.BENCH_LEVELS ?? '1,64').split(',').map(Number);

const start = startChild;

const pct = (xs, p) => (xs.length ? [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))] : NaN);
const f2 = (x) => (Number.isFinite(x) ? x.toFixed(2) : '—');

/** One streamed call: ms to the first event, gaps between event-bearing chunks. */
function request(target, body, agent) {
  return new Promise((res, rej) => {
    const t0 = performance.now();
    let first = 0;
    let last = 0;
    const gaps = [];
    const req = http.request({ host: '127.0.0.1', port: target.port, path: '/v1/messages', method: 'POST', agent, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), ...target.headers } }, (r) => {
      r.on('data', (d) => {
        const now = performance.now();
        if (!d.includes('event: ')) return;
        if (!first) first = now - t0;
        if (last) gaps.push(now - last);
        last = now;
      });
      r.on('end', () => (r.statusCode === 200 ? res({ first, gaps }) : rej(new Error(`status ${r.statusCode}`))));
    });
    req.on('error', rej);
    req.end(body);
  });
}

const BODY = JSON.stringify({ model: 'claude-haiku-4-5', max_tokens: 64, stream: true, messages: [{ role: 'user', content: 'hello' }] });

/** `clients` concurrent streams, `n` calls in all or until `ms` passed. */
async function load(target, clients, { n = Infinity, ms = Infinity }) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: clients });
  const first = [];
  const gaps = [];
  let left = n;
  let errors = 0;
  const end = performance.now() + ms;
  await Promise.all(
    Array.from({ length: clients }, async () => {
      while (left-- > 0 && performance.now() < end) {
        try {
          const r = await request(target, BODY, agent);
          first.push(r.first);
          gaps.push(...r.gaps);
        } catch {
          errors++;
        }
      }
    }),
  );
  agent.destroy();
  return { first: pct(first, 50), gap: gaps.length ? gaps.reduce((a, b) => a + b, 0) / gaps.length : NaN, errors };
}

const up = await start([join(ROOT, 'bench/gateway/upstream.js')]);
const upUrl = `http://127.0.0.1:${up.line}`;
const targets = [{ name: 'direct', port: Number(up.line), headers: { 'x-api-key': 'sk' } }];
const bare = await start([join(ROOT, 'bench/gateway/passthrough.js'), upUrl], PROFILE ? ['--cpu-prof', `--cpu-prof-dir=${join(PROFILE, 'bare')}`] : []);
targets.push({ name: 'bare', proc: bare, port: Number(bare.line.split(' ')[0]), headers: { 'x-api-key': 'sk' } });
// the same floor over the gateway's own upstream client (undici's dispatcher, chunk by chunk)
const bareUndici = await start([join(ROOT, 'bench/gateway/passthrough.js'), upUrl, 'undici-stream'], PROFILE ? ['--cpu-prof', `--cpu-prof-dir=${join(PROFILE, 'bare-undici')}`] : []);
targets.push({ name: 'bare-undici', proc: bareUndici, port: Number(bareUndici.line.split(' ')[0]), headers: { 'x-api-key': 'sk' } });
for (const [i, root] of ROOTS.entries()) {
  const prof = PROFILE ? ['--cpu-prof', `--cpu-prof-dir=${join(PROFILE, `gw${i}`)}`] : []; // one file per thread
  const gw = await start([join(root, 'bench/gateway/gateway.js'), upUrl, 'node'], prof);
  const [port, token] = gw.line.split(' ');
  targets.push({ name: ROOTS.length > 1 ? `gw${i}` : 'flotilla', root, proc: gw, port: Number(port), headers: { 'x-api-key': token, 'anthropic-version': '2023-06-01' } });
}
const proxies = targets.filter((t) => t.proc);
for (const t of targets) if (t.root) console.log(`${t.name}: ${t.root}`);

// warm-up (JIT): a few hundred streams each
for (const t of proxies) await load(t, 16, { n: 200 });

console.log(`\nCPU µs per streamed call (20 events) in the proxy process, ${N} calls per case`);
console.log(['streams'.padEnd(8), ...proxies.map((t) => t.name.padStart(11)), ...proxies.filter((t) => !t.name.startsWith('bare')).map((t) => `${t.name}/bare`.padStart(14))].join(' '));
for (const c of LEVELS) {
  const cpu = {};
  for (const t of proxies) {
    const before = await t.proc.cpu();
    await load(t, c, { n: N });
    cpu[t.name] = ((await t.proc.cpu()) - before) / N;
  }
  console.log([String(c).padEnd(8), ...proxies.map((t) => cpu[t.name].toFixed(0).padStart(11)), ...proxies.filter((t) => !t.name.startsWith('bare')).map((t) => (cpu[t.name] / cpu.bare).toFixed(2).padStart(14))].join(' '));
}

if (process.env.BENCH_WALL !== '0') {
  console.log(`\nwall clock, ${SECONDS} s per target (ms: median first event, added over direct, mean gap)`);
  const rounds = Number(process.env.BENCH_ROUNDS ?? 1);
  for (let round = 0; round < rounds; round++) for (const c of LEVELS) {
    const r = {};
    for (const t of targets) r[t.name] = await load(t, c, { ms: SECONDS * 1000 });
    const d = r.direct;
    const cells = targets.map((t) => `${t.name} ${f2(r[t.name].first)}${t.name === 'direct' ? '' : ` +${f2(r[t.name].first - d.first)}`} gap ${f2(r[t.name].gap)}${r[t.name].errors ? ` (${r[t.name].errors} errors)` : ''}`);
    console.log(`${String(c).padStart(3)} streams | ${cells.join(' | ')}`);
  }
}
if (PROFILE) {
  await Promise.all(proxies.map((t) => new Promise((r) => (t.proc.p.once('exit', r), t.proc.p.kill('SIGINT')))));
  console.log(`profiles in ${PROFILE}`);
}
process.exit(0);
