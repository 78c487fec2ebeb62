// Closed-loop load over raw keep-alive TCP connections, for the non-streamed phases of
// bench/gateway.bench.js. Cheap by design, like wrk (and bench/webhooks/load.js): the request
// is encoded to bytes once, and each connection writes it and reads the response (status line,
// then a Content-Length or chunked body) before sending the next. A node:http client costs the
// load generator ~30-60 µs of CPU per request here, on the same 2 cores as the proxies it
// measures; with this one, requests/s is limited by the proxy under test, not by the client.
import net from 'node:net';

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
 * Where the response that starts at `buf[0]` ends: its total length in bytes, or -1 when more
 * bytes are needed. Handles Content-Length and chunked bodies (Portkey's Hono server sends
 * chunked). @throws on a response with neither.
 */
function responseEnd(buf) {
  const end = buf.indexOf('\r\n\r\n');
  if (end < 0) return -1;
  const head = buf.toString('latin1', 0, end);
  const len = /\r\ncontent-length:\s*(\d+)/i.exec(head);
  if (len) {
    const total = end + 4 + Number(len[1]);
    return buf.length >= total ? total : -1;
  }
  if (!/\r\ntransfer-encoding:\s*chunked/i.test(head)) throw new Error(`response without a length: ${head.split('\r\n')[0]}`);
  let at = end + 4;
  for (;;) {
    const nl = buf.indexOf('\r\n', at);
    if (nl < 0) return -1;
    const size = parseInt(buf.toString('latin1', at, nl), 16);
    at = nl + 2 + size + 2;
    if (buf.length < at) return -1;
    if (size === 0) return at;
  }
}

/** One keep-alive connection: `send(bytes)` resolves with the status code once the whole response is in. */
function connection(host, port) {
  const socket = net.connect(port, host);
  socket.setNoDelay(true);
  let buf = Buffer.alloc(0);
  let done = null;
  let fail = null;
  socket.on('data', (chunk) => {
    buf = buf.length ? Buffer.concat([buf, chunk]) : chunk;
    if (!done) return;
    let total;
    try {
      total = responseEnd(buf);
    } catch (e) {
      return fail(e);
    }
    if (total < 0) return;
    const status = Number(buf.toString('latin1', 9, 12));
    buf = buf.subarray(total);
    const d = done;
    done = fail = null;
    d(status);
  });
  const closed = (e) => fail?.(e ?? new Error('connection closed'));
  socket.on('error', closed);
  socket.on('close', () => closed());
  return {
    send: (bytes) =>
      new Promise((resolve, reject) => {
        done = resolve;
        fail = reject;
        socket.write(bytes);
      }),
    close: () => socket.destroy(),
  };
}

/**
 * `clients` connections each sending the request back to back for `seconds` (after 0.5 s of
 * warm-up under the same load).
 * @returns { rps, p50, p99 (ms), errors (non-200 responses and broken connections) }
 */
export async function rawLoad({ host = '127.0.0.1', port, path, headers, body, clients, seconds }) {
  const bytes = encode(host, port, path, { 'content-type': 'application/json', ...headers }, body);
  const conns = Array.from({ length: clients }, () => connection(host, port));
  // Warm-up: half a second of the same load (JIT tiers, connection pools, the store's first pages).
  const warmEnd = performance.now() + 500;
  await Promise.all(conns.map(async (c) => { while (performance.now() < warmEnd) if ((await c.send(bytes).catch(() => 0)) === 0) return; }));
  const lat = [];
  let errors = 0;
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
  for (const c of conns) c.close();
  lat.sort((a, b) => a - b);
  return { rps: lat.length / secs, p50: pct(lat, 50), p99: pct(lat, 99), errors };
}
