// CPU per gateway call (issue 3), robust to a noisy machine: the gateway process's own CPU time
// (process.cpuUsage, read over SIGUSR2) over N calls, divided by N — not wall-clock latency.
// Each of these runs in its own process against the same fake upstream (bench/gateway/upstream.js):
//   passthrough — a bare Node proxy (bench/gateway/passthrough.js, node:http's client), the floor;
//   passthrough-undici — the same over undici's dispatcher, the gateway's own upstream client
//                 (non-streamed cases only: it reads a reply whole);
//   node        — the Flotilla gateway served as the control plane does (/v1/* → plain node:http);
//   hono        — the same gateway through its Hono app and @hono/node-server.
// Non-streamed calls at 1 and 16 concurrent clients, then streamed (20 events) at 1 client.
// Prints µs of CPU per call and the ratio to passthrough. Usage (after `npx tsc -p tsconfig.build.json`):
//   BENCH_CALLS=3000 node bench/gateway-cpu.bench.js [modes, default passthrough,node,hono]
// BENCH_ROOT=<dir> takes the gateway from another build (its bench/gateway/gateway.js + dist/).
// BENCH_PROFILE=DIR: a CPU profile of each gateway over its measured cases (bench/gateway/gateway.js).
// A mode `node@DIR` is the gateway of another build (DIR's bench/gateway/gateway.js + dist/), e.g.
// `passthrough,node@/tmp/before,node` to compare two builds in one run. BENCH_ROUNDS=R runs the
// cases R times, the modes interleaved, and keeps each one's least CPU per call (noise only adds).
// BENCH_CLIENTS=1,16,64: the non-streamed cases' client counts (default 1,16).
// BENCH_STREAM=0 skips the streamed case (the non-streamed ones alone, quicker).
import http from 'node:http';
import { Buffer } from 'node:buffer';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startChild } from './lib/child.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const GW_ROOT = process.env.BENCH_ROOT ?? ROOT;
const N = Number(process.env.BENCH_CALLS ?? 3000);
const MODES = (process.argv[2] ?? 'passthrough,node,hono').split(',');
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 1);

const start = startChild;

function call(port, headers, body, agent) {
  return new Promise((res, rej) => {
    const req = http.request({ host: '127.0.0.1', port, path: '/v1/messages', method: 'POST', agent, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), ...headers } }, (r) => {
      r.resume();
      r.on('end', () => (r.statusCode === 200 ? res() : rej(new Error(`status ${r.statusCode}`))));
    });
    req.on('error', rej);
    req.end(body);
  });
}

async function run(port, headers, clients, stream, n) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: clients });
  const body = JSON.stringify({ model: 'claude-haiku-4-5', max_tokens: 64, stream, messages: [{ role: 'user', content: 'hello' }] });
  let left = n;
  await Promise.all(
    Array.from({ length: clients }, async () => {
      while (left-- > 0) await call(port, headers, body, agent);
    }),
  );
  agent.destroy();
}

const up = await start([join(ROOT, 'bench/gateway/upstream.js')]);
const upUrl = `http://127.0.0.1:${up.line}`;
const cases = [
  ...(process.env.BENCH_CLIENTS ?? '1,16').split(',').map((k) => ({ name: `json, ${k} client${k === '1' ? '' : 's'}`, clients: Number(k), stream: false, n: N })),
  { name: 'stream, 1 client', clients: 1, stream: true, n: Math.max(50, Math.round(N / 20)) },
].filter((c) => !c.stream || process.env.BENCH_STREAM !== '0');
const results = {};
const procs = {};
for (const mode of MODES) {
  // `node@DIR`: the gateway (node mode) of another build, to compare two builds in one run.
  const [m, dir] = mode.split('@');
  const proc =
    mode === 'passthrough' || mode === 'passthrough-undici'
      ? await start([join(ROOT, 'bench/gateway/passthrough.js'), upUrl, mode === 'passthrough' ? 'http' : 'undici'])
      : await start([join(dir ?? GW_ROOT, 'bench/gateway/gateway.js'), upUrl, m]);
  const [port, token] = proc.line.split(' ');
  const headers = { 'x-api-key': token, 'anthropic-version': '2023-06-01' };
  await run(Number(port), headers, 4, false, 500); // warm-up (JIT, prepared statements)
  procs[mode] = { proc, port: Number(port), headers };
  results[mode] = {};
}
// Rounds, modes interleaved within each case; each figure is its round's least (the noise of a
// shared machine only adds CPU).
for (let round = 0; round < ROUNDS; round++) {
  for (const c of cases) {
    for (const mode of MODES) {
      const { proc, port, headers } = procs[mode];
      const before = await proc.cpu();
      await run(port, headers, c.clients, c.stream, c.n);
      const after = await proc.cpu();
      results[mode][c.name] = Math.min(results[mode][c.name] ?? Infinity, (after - before) / c.n);
    }
  }
}
for (const mode of MODES) {
  const { proc } = procs[mode];
  if (process.env.BENCH_PROFILE && mode !== 'passthrough') {
    proc.p.removeAllListeners('exit');
    const exited = new Promise((r) => proc.p.once('exit', r));
    proc.p.kill('SIGTERM');
    await exited;
  } else proc.p.kill('SIGKILL');
}
console.log(`CPU µs per call in the proxy process (N=${N} json calls per case${GW_ROOT !== ROOT ? `, gateway from ${GW_ROOT}` : ''})`);
console.log(['case'.padEnd(18), ...MODES.map((m) => m.padStart(12)), ...(MODES.includes('passthrough') ? MODES.filter((m) => m !== 'passthrough').map((m) => `${m}/pass`.padStart(12)) : [])].join(' '));
for (const c of cases) {
  const row = [c.name.padEnd(18), ...MODES.map((m) => results[m][c.name].toFixed(0).padStart(12))];
  if (MODES.includes('passthrough')) for (const m of MODES.filter((x) => x !== 'passthrough')) row.push((results[m][c.name] / results.passthrough[c.name]).toFixed(2).padStart(12));
  console.log(row.join(' '));
}
process.exit(0);
