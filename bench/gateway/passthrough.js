// A bare Node pass-through proxy (no auth, metering or budgets): the floor the gateway is
// compared with (bench/gateway.bench.js, bench/gateway-cpu.bench.js). Prints `<port> -`;
// SIGUSR2 prints `cpu <µs>` (process.cpuUsage). Usage: node passthrough.js UPSTREAM_URL [http|undici|undici-stream]
// `http` (default): node:http's client with a keep-alive Agent, piping both bodies.
// `undici`: the gateway's own upstream client (undici Pool.dispatch, keep-alive, pipelining 1),
// bodies read whole as the gateway reads a non-streamed reply: the floor for the same client.
// `undici-stream`: the same client, the reply written chunk by chunk as it arrives (the streamed
// floor for the gateway's client; bench/gateway-streams.bench.js `bare-undici`).
import http from 'node:http';
import { Pool } from 'undici';

const up = new URL(process.argv[2]);
const client = process.argv[3] ?? 'http';
const agent = new http.Agent({ keepAlive: true, maxSockets: 512 });
const pool = new Pool(up.origin, { connections: 512, pipelining: 1 });

/** Forwards over node:http, streaming both ways. */
function viaHttp(req, res) {
  const out = http.request({ hostname: up.hostname, port: up.port, path: req.url, method: req.method, headers: req.headers, agent }, (r) => {
    res.writeHead(r.statusCode ?? 502, r.headers);
    r.pipe(res);
  });
  out.on('error', () => res.writeHead(502).end());
  req.pipe(out);
}

/** Reads `req`'s body whole, then calls `send({ path, method, headers, body })` with what undici's dispatch takes. */
function wholeRequest(req, send) {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    const body = Buffer.concat(chunks);
    const headers = { ...req.headers, 'content-length': String(body.length) };
    delete headers.host;
    delete headers.connection;
    send({ path: req.url, method: req.method, headers, body });
  });
}

/** Forwards over undici's dispatcher: the request body read whole, the reply whole. */
function viaUndici(req, res) {
  wholeRequest(req, (request) => {
    let status = 502;
    let type = 'application/octet-stream';
    const parts = [];
    pool.dispatch(
      request,
      {
        onConnect() {},
        onError: () => res.writeHead(502).end(),
        onHeaders(s, raw) {
          status = s;
          for (let i = 0; i < raw.length; i += 2) if (raw[i].toString().toLowerCase() === 'content-type') type = raw[i + 1].toString();
          return true;
        },
        onData(c) {
          parts.push(c);
          return true;
        },
        onComplete() {
          const b = Buffer.concat(parts);
          res.writeHead(status, { 'content-type': type, 'content-length': String(b.length) });
          res.end(b);
        },
      },
    );
  });
}

/** Forwards over undici's dispatcher, the reply streamed: each chunk written as it arrives (backpressure kept). */
function viaUndiciStream(req, res) {
  wholeRequest(req, (request) => {
    let resume = null;
    res.on('drain', () => resume?.());
    pool.dispatch(
      request,
      {
        onConnect() {},
        onError: () => (res.headersSent ? res.destroy() : res.writeHead(502).end()),
        onHeaders(s, raw, r) {
          resume = r;
          const out = [];
          for (let i = 0; i < raw.length; i += 2) {
            const k = raw[i].toString().toLowerCase();
            if (k !== 'connection' && k !== 'keep-alive' && k !== 'transfer-encoding') out.push(k, raw[i + 1].toString('latin1'));
          }
          res.writeHead(s, out);
          return true;
        },
        onData: (c) => res.write(c),
        onComplete: () => res.end(),
      },
    );
  });
}

const server = http.createServer(client === 'undici' ? viaUndici : client === 'undici-stream' ? viaUndiciStream : viaHttp);
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => console.log(`${server.address().port} -`));
process.on('SIGUSR2', () => {
  const u = process.cpuUsage();
  console.log(`cpu ${u.user + u.system}`);
});
process.on('SIGINT', () => process.exit(0));
