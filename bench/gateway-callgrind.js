// Instructions per gateway call, per thread, under valgrind's callgrind (issue 3's 64-client
// goal): a count that this machine's weather barely moves (two runs of one build differ by a few
// %), where wall-clock and /proc CPU figures move by tens of % from one minute to the next.
// The gateway (bench/gateway/gateway.js: SQLite, metering and budgets on, a log line per call)
// runs under callgrind with instrumentation off; WARM calls (default 6,000) over 16 raw
// keep-alive connections warm it up; then CALLS (default 2,000) are counted and dumped, one file
// per thread. Prints `thread N: K instructions a call` for every thread that did work (1 is the
// event loop; the SQLite writer is the one with ~100k; the others V8's helpers and libuv's pool).
// Usage (after `npx tsc -p tsconfig.build.json`; needs `valgrind`, Debian's package):
//   node bench/gateway-callgrind.js [ROOT=this checkout] [CALLS]
// ROOT: a checkout (its bench/gateway/gateway.js and dist/) to compare builds.
// BENCH_PERF_MAP=1 runs the gateway with `--perf-basic-prof`: /tmp/perf-<pid>.map then names the
// JIT frames that `callgrind_annotate` shows as `???:0x...` (look the address up in the map) —
// how stop 45 found the Proxy and the structured-clone costs. The dumps stay in OUT (printed).
import { execSync, spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { connection } from './lib/raw-http.js';

const HERE = dirname(fileURLToPath(import.meta.url));
const root = resolve(process.argv[2] ?? join(HERE, '..'));
const CALLS = Number(process.argv[3] ?? 2000);
const WARM = Number(process.env.WARM ?? 6000);
const out = mkdtempSync(join(tmpdir(), 'bench-callgrind-'));

/** Starts `cmd args` and resolves with it and the first line it prints. */
const start = (cmd, args) =>
  new Promise((res, rej) => {
    const p = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'ignore'] });
    let o = '';
    p.stdout.on('data', (d) => {
      o += d;
      if (o.includes('\n')) res({ p, line: o.split('\n')[0].trim() });
    });
    p.on('error', rej);
    p.on('exit', (code) => rej(new Error(`${cmd} exited ${code} before printing its port`)));
  });

const up = await start(process.execPath, [join(HERE, 'gateway/upstream.js')]);
const upPort = Number(up.line.split(' ')[0]);
const vg = ['--tool=callgrind', '--instr-atstart=no', '--separate-threads=yes', '--smc-check=all-non-file', `--callgrind-out-file=${join(out, 'cg.out')}`];
const node = [process.execPath, ...(process.env.BENCH_PERF_MAP ? ['--perf-basic-prof'] : []), join(root, 'bench/gateway/gateway.js'), `http://127.0.0.1:${upPort}`];
const gw = await start('valgrind', [...vg, ...node]);
const [port, token] = gw.line.split(' ');
const body = Buffer.from(JSON.stringify({ model: 'claude-haiku-4-5', max_tokens: 64, stream: false, messages: [{ role: 'user', content: 'hello' }] }));
const head = `POST /v1/messages HTTP/1.1\r\nhost: 127.0.0.1:${port}\r\ncontent-type: application/json\r\nx-api-key: ${token}\r\nanthropic-version: 2023-06-01\r\ncontent-length: ${body.length}\r\n\r\n`;
const request = Buffer.concat([Buffer.from(head, 'latin1'), body]);
const conns = Array.from({ length: 16 }, () => connection('127.0.0.1', Number(port)));
/** `n` calls over the 16 connections; @throws on a status other than 200. */
const calls = async (n) => {
  let left = n;
  await Promise.all(
    conns.map(async (c) => {
      while (left-- > 0) {
        const status = await c.send(request);
        if (status !== 200) throw new Error(`status ${status}`);
      }
    }),
  );
};
try {
  process.stderr.write(`warming up (${WARM} calls under valgrind)...\n`);
  await calls(WARM);
  execSync(`callgrind_control -i on ${gw.p.pid}`, { stdio: 'ignore' });
  await calls(CALLS);
  execSync(`callgrind_control -d ${gw.p.pid}`, { stdio: 'ignore' });
  execSync(`callgrind_control -i off ${gw.p.pid}`, { stdio: 'ignore' });
  await new Promise((r) => setTimeout(r, 500));
  for (const f of readdirSync(out).sort()) {
    const text = readFileSync(join(out, f), 'utf8');
    const total = /\n(?:summary|totals):\s*(\d+)/.exec(text);
    const thread = /\nthread:\s*(\d+)/.exec(text);
    if (total && Number(total[1]) > CALLS * 1000) console.log(`thread ${thread?.[1] ?? '?'}: ${Math.round(Number(total[1]) / CALLS).toLocaleString('en-US')} instructions a call`);
  }
  console.log(`dumps: ${out}${process.env.BENCH_PERF_MAP ? `; JIT names: /tmp/perf-${gw.p.pid}.map` : ''}`);
} finally {
  for (const c of conns) c.close();
  gw.p.kill('SIGKILL');
  up.p.kill();
}
process.exit(0);
