// The model gateway's overhead (issue 3). A fake Anthropic upstream, the Flotilla gateway
// (metering and budgets on, SQLite) and — when installed — the Portkey AI gateway each run in
// their own process; this process is the load generator (keep-alive HTTP/1.1: non-streamed
// calls over raw sockets with pre-encoded requests, gateway/raw-load.js, so that requests/s is
// the proxy's limit and not node:http's client cost; streams through node:http). Every target
// serves 3 s of untimed load first, and 2 s of streams (warm, as a long-running proxy is).
// Non-streamed: 1, 16, 64, 256 concurrent clients for BENCH_SECONDS (default 3) each: req/s,
// p50/p99 latency, added over calling the upstream directly; each target's best of
// BENCH_ROUNDS (default 3) rounds, the targets interleaved (this machine's speed moves by tens
// of percent from one minute to the next: one round each compared targets measured in
// different weather), and each gateway's CPU time per call over the same phases (its process's,
// from /proc: the figure the weather moves least). Streams (20 events 5 ms apart):
// 1 and 64 concurrent: time to first byte and to first event, added over direct, and the
// mean gap between events (the upstream's pacing is 5 ms); best of BENCH_ROUNDS interleaved
// rounds, as the non-streamed levels. RSS of each gateway after load.
// Then bare Node pass-through proxies at 1 and 64 clients (node:http's client and undici's, the
// gateway's own) and streams (node:http's): the floors. BENCH_GATEWAY_MODE=hono,
// BENCH_GATEWAY_STORE=memory: see bench/gateway/gateway.js.
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import http from 'node:http';
import { Buffer } from 'node:buffer';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { rawLoad } from './gateway/raw-load.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const SECONDS = Number(process.env.BENCH_SECONDS ?? 3);
// Non-streamed levels: each target's best of this many rounds (see `best`).
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
/** The best of a target's rounds at one level: most req/s, least p50, p99 and CPU per call (each its own round's); errors summed. */
const best = (runs) => ({
  rps: Math.max(...runs.map((r) => r.rps)),
  p50: Math.min(...runs.map((r) => r.p50)),
  p99: Math.min(...runs.map((r) => r.p99)),
  cpuPerCall: Math.min(...runs.map((r) => r.cpuPerCall)),
  errors: runs.reduce((a, r) => a + r.errors, 0),
});
/** The best of a target's stream rounds: least time to first byte and first event (each its own round's); the gap of the round with the least first event. */
const bestStream = (runs) => {
  const byFirst = [...runs].sort((a, b) => a.first - b.first)[0];
  return { ttfb: Math.min(...runs.map((r) => r.ttfb)), first: byFirst.first, gap: byFirst.gap, errors: runs.reduce((a, r) => a + r.errors, 0) };
};
const PORTKEY = join(ROOT, 'node_modules/@portkey-ai/gateway/build/start-server.js');
const children = [];
process.on('exit', () => children.forEach((c) => c.kill('SIGKILL')));

function start(args, env = {}) {
  return new Promise((res, rej) => {
    const p = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, ...env } });
    children.push(p);
    let out = '';
    p.stdout.on('data', (d) => {
      out += d;
      const line = out.split('\n').find((l) => l.trim());
      if (out.includes('\n') && line) res({ p, line: line.trim() });
    });
    p.on('exit', (code) => rej(new Error(`${args.join(' ')} exited ${code}: ${out}`)));
  });
}

const rss = (pid) => {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? `${Math.round(Number(m[1]) / 1024)} MB` : '?';
  } catch {
    return '?';
  }
};
/**
 * The CPU time (µs) process `pid` has used so far, all its threads: utime + stime of
 * /proc/PID/stat (proc(5); clock ticks of 10 ms, CLK_TCK 100 on Linux), NaN elsewhere.
 */
const cpuUs = (pid) => {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' '); // f[0] is field 3 (state)
    return (Number(f[11]) + Number(f[12])) * 10_000;
  } catch {
    return NaN;
  }
};
const pct = (xs, p) => (xs.length ? [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))] : NaN);
const f1 = (x) => (Number.isFinite(x) ? x.toFixed(2) : '—');

function request(target, body, agent, onEvent) {
  return new Promise((res, rej) => {
    const t0 = performance.now();
    let ttfb = 0;
    let firstEvent = 0;
    const gaps = [];
    let last = 0;
    const req = http.request({ host: '127.0.0.1', port: target.port, path: target.path, method: 'POST', agent, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), ...target.headers } }, (r) => {
      ttfb = performance.now() - t0;
      r.on('data', (d) => {
        if (!onEvent) return;
        const now = performance.now();
        const n = (d.toString().match(/^event: /gm) ?? []).length;
        if (n && !firstEvent) firstEvent = now - t0;
        if (n) {
          if (last) gaps.push(now - last);
          last = now;
        }
      });
      r.on('end', () => (r.statusCode === 200 ? res({ ms: performance.now() - t0, ttfb, firstEvent, gaps }) : rej(new Error(`status ${r.statusCode}`))));
    });
    req.on('error', rej);
    req.end(body);
  });
}

async function load(target, clients, stream, seconds = SECONDS) {
  // Non-streamed: raw keep-alive sockets (gateway/raw-load.js), so the proxy under test is the limit.
  if (!stream) {
    const cpu = target.pid ? () => cpuUs(target.pid) : undefined;
    return rawLoad({ port: target.port, path: target.path, headers: target.headers, body: JSON.stringify({ model: 'claude-haiku-4-5', max_tokens: 64, stream: false, messages: [{ role: 'user', content: 'hello' }] }), clients, seconds, cpu });
  }
  const agent = new http.Agent({ keepAlive: true, maxSockets: clients });
  const body = JSON.stringify({ model: 'claude-haiku-4-5', max_tokens: 64, stream, messages: [{ role: 'user', content: 'hello' }] });
  const lat = [];
  const ttfb = [];
  const first = [];
  const gaps = [];
  let errors = 0;
  const end = performance.now() + seconds * 1000;
  // warm-up
  await Promise.all(Array.from({ length: Math.min(clients, 8) }, () => request(target, body, agent, stream).catch(() => undefined)));
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: clients }, async () => {
      while (performance.now() < end) {
        try {
          const r = await request(target, body, agent, stream);
          lat.push(r.ms);
          ttfb.push(r.ttfb);
          if (stream) {
            first.push(r.firstEvent);
            gaps.push(...r.gaps);
          }
        } catch {
          errors++;
        }
      }
    }),
  );
  agent.destroy();
  const secs = (performance.now() - t0) / 1000;
  return { rps: lat.length / secs, p50: pct(lat, 50), p99: pct(lat, 99), ttfb: pct(ttfb, 50), first: pct(first, 50), gap: gaps.length ? gaps.reduce((a, b) => a + b, 0) / gaps.length : NaN, errors };
}

const up = await start([join(ROOT, 'bench/gateway/upstream.js')]);
const upPort = Number(up.line);
// BENCH_GATEWAY_MODE=hono measures the gateway through Hono/@hono/node-server instead of node:http.
const gw = await start([join(ROOT, 'bench/gateway/gateway.js'), `http://127.0.0.1:${upPort}`, process.env.BENCH_GATEWAY_MODE ?? 'node']);
const [gwPort, token] = gw.line.split(' ');
const targets = {
  direct: { port: upPort, path: '/v1/messages', headers: { 'x-api-key': 'sk' } },
  flotilla: { port: Number(gwPort), path: '/v1/messages', headers: { 'x-api-key': token, 'anthropic-version': '2023-06-01' }, pid: gw.p.pid },
};
let portkey = null;
if (existsSync(PORTKEY)) {
  const port = 18000 + Math.floor(Math.random() * 1000);
  const p = spawn(process.execPath, [PORTKEY, `--port=${port}`, '--headless'], { stdio: 'ignore' });
  children.push(p);
  portkey = p;
  targets.portkey = { port, pid: p.pid, path: '/v1/messages', headers: { 'x-api-key': 'sk', 'x-portkey-provider': 'anthropic', 'x-portkey-custom-host': `http://127.0.0.1:${upPort}/v1`, 'anthropic-version': '2023-06-01' } };
  for (let i = 0; i < 100; i++) {
    try {
      await request(targets.portkey, JSON.stringify({ model: 'm', max_tokens: 1, messages: [{ role: 'user', content: 'x' }] }), undefined, false);
      break;
    } catch {
      await new Promise((r) => setTimeout(r, 100));
    }
  }
} else {
  console.log('Portkey AI gateway not installed (devDependency @portkey-ai/gateway, pins in the team notes): Portkey columns skipped');
}

// Each target first serves 3 s of load at 16 clients, untimed, and then 2 s of 16 streams: a
// long-running proxy is warm (JIT tiers took ~3 s of calls to settle here), and the first timed
// level of either kind must not pay for it (the streamed path is other code: chunk steps, SSE
// usage reading).
for (const t of Object.values(targets)) {
  await load(t, 16, false, 3);
  await load(t, 16, true, 2);
}
console.log(`\nnon-streamed, ${SECONDS} s per level, best of ${ROUNDS} interleaved rounds (latency ms; "added" = over direct)`);
console.log('clients | direct req/s p50 p99 | flotilla req/s p50 p99 added-p50 added-p99' + (portkey ? ' | portkey req/s p50 p99 | flotilla/portkey req/s' : ''));
const cpuRows = [];
for (const c of [1, 16, 64, 256]) {
  // ROUNDS rounds, the targets interleaved within each; each figure is its target's best round
  // (a shared machine's noise only takes throughput away and adds latency).
  const runs = { direct: [], flotilla: [], portkey: [] };
  for (let r = 0; r < ROUNDS; r++) {
    runs.direct.push(await load(targets.direct, c, false));
    runs.flotilla.push(await load(targets.flotilla, c, false));
    if (portkey) runs.portkey.push(await load(targets.portkey, c, false));
  }
  const d = best(runs.direct);
  const g = best(runs.flotilla);
  const p = portkey ? best(runs.portkey) : null;
  let line = `${String(c).padStart(7)} | ${d.rps.toFixed(0)} ${f1(d.p50)} ${f1(d.p99)} | ${g.rps.toFixed(0)} ${f1(g.p50)} ${f1(g.p99)} +${f1(g.p50 - d.p50)} +${f1(g.p99 - d.p99)}`;
  if (p) line += ` | ${p.rps.toFixed(0)} ${f1(p.p50)} ${f1(p.p99)} | ${(g.rps / p.rps).toFixed(1)}×`;
  if (d.errors + g.errors + (p?.errors ?? 0)) line += `  (errors: direct ${d.errors}, flotilla ${g.errors}${p ? `, portkey ${p.errors}` : ''})`;
  console.log(line);
  cpuRows.push({ c, g, p });
}
// Each gateway's own cost, which the machine's weather moves far less than requests/s: its
// process's CPU time (all threads, /proc) over the measured phase, per call, least of the rounds.
console.log('\nCPU per call (µs, the gateway process\'s user + system time over the measured phase, least of the rounds)');
console.log('clients | flotilla' + (portkey ? ' | portkey | portkey/flotilla' : ''));
for (const { c, g, p } of cpuRows) {
  console.log(`${String(c).padStart(7)} | ${g.cpuPerCall.toFixed(0)}` + (p ? ` | ${p.cpuPerCall.toFixed(0)} | ${(p.cpuPerCall / g.cpuPerCall).toFixed(1)}×` : ''));
}
console.log(`\nstreams of 20 events 5 ms apart (ms, medians; gap = mean time between events; each target's best of ${ROUNDS} interleaved rounds)`);
console.log('streams | direct ttfb first gap | flotilla ttfb first gap added-first' + (portkey ? ' | portkey ttfb first gap added-first' : ''));
for (const c of [1, 64]) {
  // As the non-streamed levels: ROUNDS rounds, the targets interleaved, each figure its
  // target's best round (one round each put the 64-stream figures of the same build anywhere
  // from +1.5 to +15 ms: the weather, as the bare pass-through's floor moved with it).
  const runs = { direct: [], flotilla: [], portkey: [] };
  for (let r = 0; r < ROUNDS; r++) {
    runs.direct.push(await load(targets.direct, c, true));
    runs.flotilla.push(await load(targets.flotilla, c, true));
    if (portkey) runs.portkey.push(await load(targets.portkey, c, true));
  }
  const d = bestStream(runs.direct);
  const g = bestStream(runs.flotilla);
  const p = portkey ? bestStream(runs.portkey) : null;
  let line = `${String(c).padStart(7)} | ${f1(d.ttfb)} ${f1(d.first)} ${f1(d.gap)} | ${f1(g.ttfb)} ${f1(g.first)} ${f1(g.gap)} +${f1(g.first - d.first)}`;
  if (p) line += ` | ${f1(p.ttfb)} ${f1(p.first)} ${f1(p.gap)} +${f1(p.first - d.first)}`;
  console.log(line);
}
// The floor: a bare Node pass-through proxy (bench/gateway/passthrough.js: no auth, metering or
// budget) under the same load, so the gateway's added latency can be read against it.
// Two floors: node:http's client (piping), and undici's dispatcher, the gateway's own upstream
// client (bodies read whole, as the gateway reads a non-streamed reply): the gateway's work per
// call is what separates it from the second.
const bare = await start([join(ROOT, 'bench/gateway/passthrough.js'), `http://127.0.0.1:${upPort}`]);
targets.bare = { port: Number(bare.line.split(' ')[0]), path: '/v1/messages', headers: { 'x-api-key': 'sk' } };
const bareUndici = await start([join(ROOT, 'bench/gateway/passthrough.js'), `http://127.0.0.1:${upPort}`, 'undici']);
targets.bareUndici = { port: Number(bareUndici.line.split(' ')[0]), path: '/v1/messages', headers: { 'x-api-key': 'sk' } };
await load(targets.bare, 16, false, 3); // warm, as the others were
await load(targets.bare, 16, true, 2);
await load(targets.bareUndici, 16, false, 3);
console.log('\nbare node pass-through (non-streamed) | clients direct-p50 | bare http req/s p50 p99 added-p50 | bare undici req/s p50 added-p50 | flotilla req/s p50 added-p50');
for (const c of [1, 64]) {
  const d = await load(targets.direct, c, false);
  const b = await load(targets.bare, c, false);
  const u = await load(targets.bareUndici, c, false);
  const g = await load(targets.flotilla, c, false);
  console.log(`${String(c).padStart(7)} | ${f1(d.p50)} | ${b.rps.toFixed(0)} ${f1(b.p50)} ${f1(b.p99)} +${f1(b.p50 - d.p50)} | ${u.rps.toFixed(0)} ${f1(u.p50)} +${f1(u.p50 - d.p50)} | ${g.rps.toFixed(0)} ${f1(g.p50)} +${f1(g.p50 - d.p50)}`);
}
// The same floor for streams: what any Node proxy adds to the first event on this machine
// (at 64 streams the machine's 2 cores are shared by the upstream's events, the proxy and this
// load generator, so the floor is far from zero on a slow machine).
console.log('\nbare node pass-through (streams) | streams direct-first | bare ttfb first gap added-first | flotilla first gap added-first');
for (const c of [1, 64]) {
  const d = await load(targets.direct, c, true);
  const b = await load(targets.bare, c, true);
  const g = await load(targets.flotilla, c, true);
  console.log(`${String(c).padStart(7)} | ${f1(d.first)} | ${f1(b.ttfb)} ${f1(b.first)} ${f1(b.gap)} +${f1(b.first - d.first)} | ${f1(g.first)} ${f1(g.gap)} +${f1(g.first - d.first)}`);
}
console.log(`\nRSS after load: flotilla gateway ${rss(gw.p.pid)}${portkey ? `, portkey ${rss(portkey.pid)}` : ''}, upstream ${rss(up.p.pid)}`);
process.exit(0);
