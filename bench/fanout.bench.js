// Fan-out latency of job trees (issue 6): from `start_job` (the MCP tool, through a real
// `flotilla mcp` on stdio) to the child's first event from its runner, p50 over N children
// (BENCH_CHILDREN, default 100). Baseline in the same run: the same child started by a plain
// `POST /api/jobs` with the job token (no MCP hop). Real parts: server (SQLite), two real
// runners (the parent's, and one with 4 slots for the children), command-harness agents.
// Needs `npm run build` first.
import { mkdtempSync, mkdirSync, readFileSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { openStore } from '../dist/store/open.js';
import { startServer } from '../dist/server/server.js';
import { createRegistrationToken } from '../dist/server/auth.js';
import { startRunner } from '../dist/runner/runner.js';
import { FlotillaClient } from '../dist/client/index.js';
import { loadGatewayConfig } from '../dist/gateway/config.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const N = Number(process.env.BENCH_CHILDREN ?? 100);
const pct = (xs, p) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((xs.length * p) / 100))];
const ms = (x) => `${x.toFixed(1)} ms`;

const dir = mkdtempSync(join(tmpdir(), 'flotilla-fanout-bench-'));
const agents = join(dir, 'agents');
const agent = (name, yaml) => {
  mkdirSync(join(agents, name), { recursive: true });
  writeFileSync(join(agents, name, 'agent.yaml'), yaml);
  writeFileSync(join(agents, name, 'prompt.md'), name);
};
// The parent leaves its job token in its workspace (as an agent would use it) and stays running.
agent('bench-parent', 'name: bench-parent\nharness: command\ncommand: [sh, -c, "printenv FLOTILLA_JOB_TOKEN > token.txt; sleep 3600"]\nrunnerLabels: { bench: parent }\nlimits: { timeoutSeconds: 7200 }\n');
agent('bench-child', 'name: bench-child\nharness: command\ncommand: ["true"]\n');

const store = await openStore({ dataDir: join(dir, 'data') });
const server = await startServer({ store, dataDir: join(dir, 'data'), port: 0, agentsDirs: [agents], treeLimits: { maxDepth: 3, maxJobs: 2 * N + 10 }, gateway: loadGatewayConfig({ ...process.env, ANTHROPIC_API_KEY: '' }) });
const reg = () => createRegistrationToken(store, {}, 3_600_000, Date.now());
const runners = [
  await startRunner({ serverUrl: server.url, registrationToken: await reg(), workDir: join(dir, 'r-parent'), name: 'parent-runner', labels: { bench: 'parent' }, capacity: 1, graceMs: 1000 }),
  await startRunner({ serverUrl: server.url, registrationToken: await reg(), workDir: join(dir, 'r-kids'), name: 'child-runner', capacity: 4, graceMs: 1000 }),
];
const admin = new FlotillaClient({ url: server.url, token: server.adminToken });
const parent = await admin.createJob({ agent: 'bench-parent', input: {}, budgetUsd: 1 });
const tokenFile = join(dir, 'r-parent', 'workspaces', `job-${parent.id}`, 'token.txt');
for (let i = 0; i < 200 && !(existsSync(tokenFile) && readFileSync(tokenFile, 'utf8').trim()); i++) await new Promise((r) => setTimeout(r, 50));
const token = readFileSync(tokenFile, 'utf8').trim();

/** ms from `start()` to the child's first event from its runner (the first that is not a server status). */
async function firstEventAfter(start) {
  const t0 = performance.now();
  const id = await start();
  for await (const ev of admin.followEvents(id)) {
    if (ev.type !== 'status') return performance.now() - t0;
  }
  throw new Error(`child ${id}: stream ended without a runner event`);
}

const mcp = new Client({ name: 'bench', version: '1' });
await mcp.connect(new StdioClientTransport({ command: process.execPath, args: [join(ROOT, 'bin', 'flotilla.js'), 'mcp'], env: { PATH: process.env.PATH ?? '', FLOTILLA_URL: server.url, FLOTILLA_JOB_TOKEN: token, FLOTILLA_JOB_ID: String(parent.id) } }));
const direct = new FlotillaClient({ url: server.url, token });

const viaMcp = [];
const viaApi = [];
try {
  // Alternate the two kinds so load and warm-up affect both alike; a few warm-up rounds first.
  for (let i = 0; i < N + 3; i++) {
    const a = await firstEventAfter(async () => {
      const r = await mcp.callTool({ name: 'start_job', arguments: { agent: 'bench-child', input: {} } });
      if (r.isError) throw new Error(r.content[0].text);
      return r.structuredContent.id;
    });
    const b = await firstEventAfter(async () => (await direct.createJob({ agent: 'bench-child', input: {} })).id);
    if (i >= 3) {
      viaMcp.push(a);
      viaApi.push(b);
    }
  }
} finally {
  await mcp.close();
  for (const r of runners) await r.stop();
  await server.close();
  await store.close();
  rmSync(dir, { recursive: true, force: true });
}
const p50m = pct(viaMcp, 50);
const p50a = pct(viaApi, 50);
console.log(`fan-out latency, start_job → child's first runner event, ${N} children each (one tree, its job limit raised to fit):`);
console.log(`  start_job over MCP (flotilla mcp, stdio):  p50 ${ms(p50m)}  p90 ${ms(pct(viaMcp, 90))}  max ${ms(Math.max(...viaMcp))}`);
console.log(`  baseline POST /api/jobs with the job token: p50 ${ms(p50a)}  p90 ${ms(pct(viaApi, 90))}`);
console.log(`  ratio MCP / baseline (p50): ${(p50m / p50a).toFixed(2)}×`);
