// Closed-loop load over raw keep-alive TCP connections, for the non-streamed phases of
// bench/gateway.bench.js. Cheap by design, like wrk (and bench/webhooks/load.js): the request
// is encoded to bytes once, and each connection writes it and reads the response (status line,
// then a Content-Length or chunked body) before sending the next. A node:http client costs the
// load generator ~30-60 µs of CPU per request here, on the same 2 cores as the proxies it
// measures; with this one, requests/s is limited by the proxy under test, not by the client.
import { connection } from '../lib/raw-http.js';

const pct = (xs, p) => (xs.length ? xs[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))] : NaN);

/** The bytes of one HTTP/1.1 POST (keep-alive). */
function encode(host, port, path, headers, body) {
  const b = Buffer.from(body);
  const head = [`POST ${path} HTTP/1.1`, `host: ${host}:${port}`];
  for (const [k, v] of Object.entries(headers)) if (k.toLowerCase() !== 'content-length') head.push(`${k}: ${v}`);
  head.push(`content-length: ${b.length}`);
  return Buffer.concat([Buffer.from(`${head.join('\r\n')}\r\n\r\n`, 'latin1'), b]);
}

/**
 * `clients` connections each sending the request back to back for `seconds` (after 0.5 s of
 * warm-up under the same load). `cpu`, when given, returns the CPU time (µs) the process under
 * test has used so far: read when the measured phase starts and ends.
 * @returns { rps, p50, p99 (ms), errors (non-200 responses and broken connections), cpuPerCall
 *   (µs of the process's CPU per answered call over the measured phase; NaN without `cpu`) }
 */
export async function rawLoad({ host = '127.0.0.1', port, path, headers, body, clients, seconds, cpu }) {
  const bytes = encode(host, port, path, { 'content-type': 'application/json', ...headers }, body);
  const conns = Array.from({ length: clients }, () => connection(host, port));
  // Warm-up: half a second of the same load (JIT tiers, connection pools, the store's first pages).
  const warmEnd = performance.now() + 500;
  await Promise.all(conns.map(async (c) => { while (performance.now() < warmEnd) if ((await c.send(bytes).catch(() => 0)) === 0) return; }));
  const lat = [];
  let errors = 0;
  const cpu0 = cpu ? cpu() : NaN;
  const t0 = performance.now();
  const end = t0 + seconds * 1000;
  await Promise.all(
    conns.map(async (c) => {
      while (performance.now() < end) {
        const s = performance.now();
        let status = 0;
        try {
          status = await c.send(bytes);
        } catch {
          errors++;
          return;
        }
        if (status === 200) lat.push(performance.now() - s);
        else errors++;
      }
    }),
  );
  const secs = (performance.now() - t0) / 1000;
  const cpuPerCall = cpu ? (cpu() - cpu0) / lat.length : NaN;
  for (const c of conns) c.close();
  lat.sort((a, b) => a - b);
  return { rps: lat.length / secs, p50: pct(lat, 50), p99: pct(lat, 99), errors, cpuPerCall };
}
