// Worker thread of bench/dispatch.bench.js's latency phase: the API client and the 100 idle
// simulated runners, out of the server's thread (a real client and real runners are other
// processes on other machines; in the server's thread their fetch() and WebSocket parsing sat
// on the measured path and took its CPU). workerData: { url, admin, runners: [{ credential,
// name }], samples, warmup }. Connects every runner (hello), then one job at a time: writes
// `POST /api/jobs` on a raw keep-alive connection (pre-encoded, bench/lib/raw-http.js) and
// waits for both its 201 and some runner's `job.assign`; the latency is from the write to the
// assignment's arrival. The runner answers at once with one `job.events` frame (job.finished)
// so it is free for the next job. Posts { warm: true } once the warm-up is done, then { p50,
// p99 } (ms) over `samples` after `warmup`.
import { parentPort, workerData } from 'node:worker_threads';
import WebSocket from 'ws';
import { connection } from '../lib/raw-http.js';

const { url, admin, runners, samples, warmup } = workerData;
const base = new URL(url);
let onAssign = null;

/** One runner's socket: resolves once the server's `welcome` arrived. */
function connect(credential, name) {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url.replace(/^http/, 'ws') + '/api/runners/connect', { headers: { authorization: `Bearer ${credential}` }, perMessageDeflate: false });
    ws.on('error', reject);
    ws.on('open', () => ws.send(JSON.stringify({ type: 'hello', name, labels: {}, capacity: 1, version: 'bench', running: [] })));
    ws.on('message', (data) => {
      const t = performance.now();
      const f = JSON.parse(data.toString());
      if (f.type === 'welcome') return resolve(ws);
      if (f.type !== 'job.assign') return;
      onAssign?.(t);
      const at = new Date().toISOString();
      const { jobId, attempt } = f.assignment;
      ws.send(JSON.stringify({ type: 'job.events', jobId, attempt, events: [{ rseq: 1, at, type: 'job.finished', data: { status: 'succeeded' } }] }));
    });
  });
}

const sockets = [];
for (const r of runners) sockets.push(await connect(r.credential, r.name));
const body = Buffer.from(JSON.stringify({ agent: 'noop' }));
const request = Buffer.concat([
  Buffer.from(`POST /api/jobs HTTP/1.1\r\nhost: ${base.host}\r\nauthorization: Bearer ${admin}\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n`, 'latin1'),
  body,
]);
const api = connection(base.hostname, Number(base.port));
const xs = [];
for (let i = 0; i < warmup + samples; i++) {
  const assigned = new Promise((resolve, reject) => {
    onAssign = resolve;
    setTimeout(() => reject(new Error('a job never reached a runner within 5 s')), 5000).unref();
  });
  const t0 = performance.now();
  const status = await api.send(request);
  if (status !== 201) throw new Error(`POST /api/jobs answered ${status}`);
  const t1 = await assigned;
  onAssign = null;
  if (i >= warmup) xs.push(t1 - t0);
  if (i === warmup - 1) parentPort.postMessage({ warm: true });
}
api.close();
for (const s of sockets) s.terminate();
xs.sort((a, b) => a - b);
const pct = (p) => xs[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))];
parentPort.postMessage({ p50: pct(50), p99: pct(99) });
