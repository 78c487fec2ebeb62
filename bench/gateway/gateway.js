// The Flotilla gateway for bench/gateway.bench.js, in its own process: metering and budgets
// ON, over a real SQLite store in a temp folder (one running job with a big budget). Prints
// `<port> <job token>`. Usage: node gateway.js UPSTREAM_URL
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { serve } from '@hono/node-server';
import { openStore } from '../../dist/store/open.js';
import { createGateway } from '../../dist/gateway/gateway.js';
import { loadPriceTable } from '../../dist/gateway/prices.js';
import { hashToken } from '../../dist/core/tokens.js';

const upstream = process.argv[2];
const store = await openStore({ dataDir: mkdtempSync(join(tmpdir(), 'bench-gw-')) });
const now = Date.now();
const runner = await store.createRunner({ name: 'bench', labels: {}, capacity: 1, credentialHash: 'b'.repeat(64), now });
const job = await store.createJob({ parentId: null, agent: 'bench', agentVersion: '1', input: {}, selector: {}, priority: 0, budgetMicros: 1_000_000_000_000, now });
const token = 'flj_bench_' + 'x'.repeat(32);
await store.claimJob({ id: runner.id, labels: {} }, hashToken(token), now);
await store.transitionJob(job.id, 1, ['assigned'], 'running', now, { startedAt: now });
const app = createGateway({ store, config: { provider: 'anthropic', anthropicApiKey: 'sk-bench', anthropicBaseUrl: upstream, prices: loadPriceTable(), retry: { retries: 0 } }, scriptFor: async () => null });
const server = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }, (info) => console.log(`${info.port} ${token}`));
server.keepAliveTimeout = 60_000;
process.on('SIGINT', () => process.exit(0));
