// The Flotilla gateway for bench/gateway.bench.js, in its own process: metering and budgets
// ON, over a real SQLite store in a temp folder (one running job with a big budget). Prints
// `<port> <job token>`. Usage: node gateway.js UPSTREAM_URL [node|hono]
// `node` (default): served as the control plane does (server.ts: /v1/* to the gateway's plain
// node:http handler); `hono`: through its Hono app and @hono/node-server (web Request/Response).
// It logs as `flotilla up` does (info, a line per model call) to a file in its data folder;
// FLOTILLA_LOG_LEVEL=silent (or warn) leaves that out.
// BENCH_GATEWAY_STORE=memory swaps SQLite for the in-memory test store (to see the store's share).
// On SIGUSR2 it prints its CPU time so far (process.cpuUsage, µs): `cpu <user+system>`.
// BENCH_PROFILE=DIR: a CPU profile of the gateway from the first SIGUSR2 (after the warm-up in
// bench/gateway-cpu.bench.js) to SIGINT/SIGTERM, written to DIR/gateway-<mode>.cpuprofile.
import { mkdtempSync, openSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServer } from 'node:http';
import { serve } from '@hono/node-server';
import { openStore } from '../../dist/store/open.js';
import { createGateway } from '../../dist/gateway/gateway.js';
import { loadPriceTable } from '../../dist/gateway/prices.js';
import { hashToken } from '../../dist/core/tokens.js';
import { startProfile } from '../lib/profile.js';
import { cliLogger } from '../../dist/cli/local/stack.js';

const upstream = process.argv[2];
const mode = process.argv[3] ?? 'node';
const dataDir = mkdtempSync(join(tmpdir(), 'bench-gw-'));
const store = await openStore({ dataDir });
const now = Date.now();
const runner = await store.createRunner({ name: 'bench', labels: {}, capacity: 1, credentialHash: 'b'.repeat(64), now });
const job = await store.createJob({ parentId: null, agent: 'bench', agentVersion: '1', input: {}, selector: {}, priority: 0, budgetMicros: 1_000_000_000_000, now });
const token = 'flj_bench_' + 'x'.repeat(32);
await store.claimJob({ id: runner.id, labels: {} }, hashToken(token), now);
await store.transitionJob(job.id, 1, ['assigned'], 'running', now, { startedAt: now });
// A do-nothing store with the same job (no reads or writes): the gateway's cost without the store's.
const jobRow = await store.findJobByTokenHash(hashToken(token));
let nextId = 1;
const memory =
  process.env.BENCH_GATEWAY_STORE === 'memory'
    ? {
        findJobByTokenHash: async (h) => (h === hashToken(token) ? jobRow : null),
        reserveBudget: async (rootId) => ({ ok: true, reservationId: nextId++, budget: { rootId, limitMicros: 1e12, spentMicros: 0, reservedMicros: 0, remainingMicros: 1e12 } }),
        settleBudget: async () => true,
        recordModelCall: async () => undefined,
        listModelRoutes: async () => [],
        listModelPrices: async () => [],
      }
    : null;
// The server's log as `flotilla up` has it (info: a line per model call), to a file as stderr
// often is; FLOTILLA_LOG_LEVEL=silent leaves it out.
const logFd = openSync(join(dataDir, 'gateway.log'), 'a');
const log = cliLogger({ FLOTILLA_LOG_LEVEL: process.env.FLOTILLA_LOG_LEVEL }, 'info', (text) => void writeSync(logFd, text));
const app = createGateway({ store: memory ?? store, config: { provider: 'anthropic', anthropicApiKey: 'sk-bench', anthropicBaseUrl: upstream, prices: loadPriceTable(), retry: { retries: 0 } }, scriptFor: async () => null, log });
let server;
if (mode === 'hono') {
  server = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }, (info) => console.log(`${info.port} ${token}`));
} else {
  server = createServer((req, res) => (req.url?.startsWith('/v1/') ? app.node(req, res) : res.writeHead(404).end()));
  server.listen(0, '127.0.0.1', () => console.log(`${server.address().port} ${token}`));
}
server.keepAliveTimeout = 60_000;
let profile = null;
process.on('SIGUSR2', () => {
  const u = process.cpuUsage();
  console.log(`cpu ${u.user + u.system}`);
  if (process.env.BENCH_PROFILE && !profile) profile = startProfile();
});
const stop = async () => {
  if (profile) await (await profile).stop(`gateway-${mode}`);
  process.exit(0);
};
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
