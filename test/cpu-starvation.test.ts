/**
 * Liveness under CPU starvation (issue 5): a job that burns every core for 60 s (one busy
 * thread per core, plus one) on a real runner with a 1 s heartbeat and a 5 s timeout. The
 * runner keeps heartbeating (its event loop is not the job's), so the job is never lost and the
 * runner never offline; the job then succeeds. FLOTILLA_BURN_SECONDS shortens it locally.
 */
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { openStore } from '../src/store/open.js';
import { startServer } from '../src/server/server.js';
import { createRegistrationToken } from '../src/server/auth.js';
import { startRunner } from '../src/runner/runner.js';
import { ROOT } from './helpers.js';

const BURN_SECONDS = Number(process.env.FLOTILLA_BURN_SECONDS ?? 60);
const TIMEOUT_MS = 5000;

describe('CPU starvation', () => {
  const dir = mkdtempSync(join(tmpdir(), 'flotilla-burn-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it(`a runner whose job burns every core for ${BURN_SECONDS} s is never declared lost`, { timeout: (BURN_SECONDS + 60) * 1000 }, async () => {
    const agents = join(dir, 'agents');
    mkdirSync(join(agents, 'burner'), { recursive: true });
    writeFileSync(
      join(agents, 'burner', 'burn.mjs'),
      [
        "import { Worker } from 'node:worker_threads';",
        "import { availableParallelism } from 'node:os';",
        `const end = Date.now() + ${BURN_SECONDS * 1000};`,
        "const code = `const end = ${end}; let x = 0; while (Date.now() < end) { for (let i = 0; i < 1e6; i++) x += i; }`;",
        'const ws = Array.from({ length: availableParallelism() + 1 }, () => new Worker(code, { eval: true }));',
        'await Promise.all(ws.map((w) => new Promise((r) => w.on("exit", r))));',
        'console.log("burned");',
      ].join('\n'),
    );
    writeFileSync(join(agents, 'burner', 'agent.yaml'), 'name: burner\nharness: command\ncommand: [node, ./burn.mjs]\nlimits: { timeoutSeconds: 600 }\ninputSchema: { type: object, properties: { repo: { type: string } } }\n');
    writeFileSync(join(agents, 'burner', 'prompt.md'), 'burn');
    const store = await openStore({ dataDir: join(dir, 'data') });
    const server = await startServer({
      store,
      dataDir: join(dir, 'data'),
      port: 0,
      agentsDirs: [agents],
      gateway: { provider: 'scripted', anthropicBaseUrl: 'http://127.0.0.1:9', prices: { version: 't', models: {}, default: { input: 3, output: 15, cacheWrite5m: 3.75, cacheWrite1h: 6, cacheRead: 0.3 } } },
      heartbeatIntervalMs: 1000,
      heartbeatTimeoutMs: TIMEOUT_MS,
      sweepIntervalMs: 500,
    });
    const runner = await startRunner({
      serverUrl: server.url,
      registrationToken: await createRegistrationToken(store, {}, 60_000, Date.now()),
      workDir: join(dir, 'runner'),
      name: 'burner-box',
      repoBaseDir: ROOT,
    });
    try {
      const api = (path: string, body?: unknown) =>
        fetch(server.url + path, { method: body ? 'POST' : 'GET', headers: { authorization: `Bearer ${server.adminToken}`, 'content-type': 'application/json' }, ...(body ? { body: JSON.stringify(body) } : {}) });
      const job = (await (await api('/api/jobs', { agent: 'burner', input: { repo: 'examples/calc' } })).json()) as { id: number };
      const seen = new Set<string>();
      let maxGap = 0;
      let running = false;
      const deadline = Date.now() + (BURN_SECONDS + 45) * 1000;
      let status = '';
      while (Date.now() < deadline) {
        const j = (await (await api(`/api/jobs/${job.id}`)).json()) as { status: string };
        status = j.status;
        const rs = (await (await api('/api/runners')).json()) as { runners: Array<{ status: string; lastHeartbeatAt: string | null }> };
        const r = rs.runners[0]!;
        seen.add(r.status);
        if (status === 'running') running = true;
        if (running && r.lastHeartbeatAt) maxGap = Math.max(maxGap, Date.now() - Date.parse(r.lastHeartbeatAt));
        if (['succeeded', 'failed', 'lost', 'cancelled'].includes(status)) break;
        await new Promise((res) => setTimeout(res, 250));
      }
      console.log(`burn: ${availableParallelism() + 1} busy threads for ${BURN_SECONDS} s; runner statuses seen ${[...seen].join(',')}; largest heartbeat age ${maxGap} ms (timeout ${TIMEOUT_MS})`);
      expect(running).toBe(true);
      expect(status).toBe('succeeded');
      expect(seen.has('offline')).toBe(false);
      expect(maxGap).toBeLessThan(TIMEOUT_MS);
    } finally {
      await runner.stop();
      await server.close();
      await store.close();
    }
  });
});
