// A bare Node pass-through proxy (no auth, metering or budgets): the floor the gateway's CPU per
// call is compared with in bench/gateway-cpu.bench.js. Prints `<port> -`; SIGUSR2 prints
// `cpu <µs>` (process.cpuUsage). Usage: node passthrough.js UPSTREAM_URL
import http from 'node:http';

const up = new URL(process.argv[2]);
const agent = new http.Agent({ keepAlive: true, maxSockets: 512 });
const server = http.createServer((req, res) => {
  const out = http.request({ hostname: up.hostname, port: up.port, path: req.url, method: req.method, headers: req.headers, agent }, (r) => {
    res.writeHead(r.statusCode ?? 502, r.headers);
    r.pipe(res);
  });
  out.on('error', () => res.writeHead(502).end());
  req.pipe(out);
});
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => console.log(`${server.address().port} -`));
process.on('SIGUSR2', () => {
  const u = process.cpuUsage();
  console.log(`cpu ${u.user + u.system}`);
});
process.on('SIGINT', () => process.exit(0));
