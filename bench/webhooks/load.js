// Load generator of bench/webhooks.bench.js, run in a worker thread so that it does not share
// the server's event loop (the bench used to measure its own fetch() calls as much as the
// server). Cheap by design, like wrk: every request is encoded to bytes (body pre-signed)
// before the clock starts, and each of `conc` keep-alive TCP connections writes a request and
// reads its response (status line + Content-Length) before the next one; no node:http client
// objects or fetch per request (they cost the client 200-300 µs of CPU per request here).
// workerData: { url, conc }. Message in: { name, requests: [{ path, headers, body? }], rate? };
// out: { name, rate (requests/s achieved), p50, p99 (ms), bad (responses other than 200) }.
// Without `rate`: closed loop, `conc` requests in flight, latency from send to response. With
// `rate` (requests/s): open loop, request i is due at start + i/rate and its latency counts from
// that due time (so time spent waiting for a free connection counts too: no coordinated
// omission), over max(conc, 64) connections. BENCH_TRACE=1: the open-loop phase also prints its
// 60 slowest deliveries as `due ms:latency ms` on stderr (one stall shows as a run of them).
import { connection } from '../lib/raw-http.js';
import { parentPort, workerData } from 'node:worker_threads';

const { url, conc } = workerData;
const base = new URL(url);
const pct = (xs, p) => xs[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))];

/** The bytes of one HTTP/1.1 request (keep-alive). */
function encode(r) {
  const body = r.body === undefined ? null : Buffer.from(r.body);
  const head = [`${body ? 'POST' : 'GET'} ${r.path} HTTP/1.1`, `host: ${base.host}`];
  for (const [k, v] of Object.entries(r.headers)) if (k.toLowerCase() !== 'content-length') head.push(`${k}: ${v}`);
  if (body) head.push(`content-length: ${body.length}`);
  const h = Buffer.from(`${head.join('\r\n')}\r\n\r\n`, 'latin1');
  return body ? Buffer.concat([h, body]) : h;
}

/** Sends `requests` (closed loop, or paced at `rate`/s when given); latencies in ms. */
async function run(requests, rate) {
  const bytes = requests.map(encode);
  const conns = Array.from({ length: Math.min(rate ? Math.max(conc, 64) : conc, bytes.length) }, () => connection(base.hostname, Number(base.port)));
  const lat = new Array(bytes.length);
  let next = 0;
  let bad = 0;
  const t0 = performance.now();
  const due = (i) => (rate ? t0 + (i * 1000) / rate : null);
  await Promise.all(
    conns.map(async (c) => {
      while (next < bytes.length) {
        const i = next++;
        const at = due(i);
        if (at !== null && at > performance.now()) await new Promise((r) => setTimeout(r, at - performance.now()));
        const s = at ?? performance.now();
        const status = await c.send(bytes[i]);
        lat[i] = performance.now() - s;
        if (status !== 200) bad++;
      }
    }),
  );
  const secs = (performance.now() - t0) / 1000;
  for (const c of conns) c.close();
  if (process.env.BENCH_TRACE && rate) {
    const worst = lat.map((l, i) => [i, l]).sort((a, b) => b[1] - a[1]).slice(0, 60);
    console.error('worst (due ms, latency ms):', worst.sort((a, b) => a[0] - b[0]).map(([i, l]) => `${((i * 1000) / rate).toFixed(0)}:${l.toFixed(0)}`).join(' '));
  }
  lat.sort((a, b) => a - b);
  return { rate: bytes.length / secs, p50: pct(lat, 50), p99: pct(lat, 99), bad };
}

parentPort.on('message', async (phase) => {
  const r = await run(phase.requests, phase.rate);
  parentPort.postMessage({ name: phase.name, ...r });
});
