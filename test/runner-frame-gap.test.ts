// The real runner (src/runner) against a real server, when one job.events frame fails to be
// stored (a database error while the connection stays up): the runner's next frame would skip
// that frame's rseqs. Acknowledging it (the highest stored rseq) made the runner forget the
// failed frame's events for good; now the gap closes the connection (4400), the runner
// reconnects and resends from its last ack, and every line is stored exactly once, in order.
import { mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Job, JobEvent } from '../src/protocol/index.js';
import { startRunner, type RunningRunner } from '../src/runner/runner.js';
import type { FrameOutcome, RunnerFrame } from '../src/store/dispatch-types.js';
import { openStore } from '../src/store/open.js';
import type { Store } from '../src/store/types.js';
import { createRegistrationToken } from '../src/server/auth.js';
import { startServer, type RunningServer } from '../src/server/server.js';
import { SHIPPED_AGENTS, TEST_GATEWAY } from '../src/server/test-helpers.js';

const LINES = 400;

async function waitFor<T>(fn: () => Promise<T>, ok: (v: T) => boolean, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  while (true) {
    const v = await fn();
    if (ok(v)) return v;
    if (Date.now() > deadline) throw new Error(`condition not met in ${timeoutMs} ms: ${JSON.stringify(v).slice(0, 500)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('a frame the store failed to take', () => {
  let dir: string;
  let base: Store;
  let server: RunningServer;
  let runner: RunningRunner | undefined;
  /** Replaces store.applyRunnerFrame while set (the SQLite store is a Proxy: wrapped, not patched). */
  let frameHook: ((f: RunnerFrame, now: number) => Promise<FrameOutcome>) | null = null;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'flotilla-hub-gap-'));
    await mkdir(join(dir, 'agents', 'chatty'), { recursive: true });
    // Prints LINES lines, a few at a time, so the runner sends them in many frames.
    const script = `for i in $(seq 1 ${LINES}); do echo "line $i"; case $i in *0) sleep 0.01;; esac; done`;
    await writeFile(join(dir, 'agents', 'chatty', 'agent.yaml'), ['name: chatty', 'harness: command', `command: [sh, -c, ${JSON.stringify(script)}]`, 'runnerLabels: { pool: gap }'].join('\n'));
    await writeFile(join(dir, 'agents', 'chatty', 'prompt.md'), 'talk');
    base = await openStore({ dataDir: join(dir, 'db') });
    const store = new Proxy(base, {
      get(target, prop) {
        if (prop === 'applyRunnerFrame' && frameHook) return frameHook;
        const v = Reflect.get(target, prop) as unknown;
        return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
      },
    });
    server = await startServer({ store, dataDir: dir, port: 0, agentsDirs: [SHIPPED_AGENTS, join(dir, 'agents')], gateway: TEST_GATEWAY, dispatchIntervalMs: 100 });
  });
  afterAll(async () => {
    await runner?.stop();
    await server.close();
    await base.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('loses no event: the next frame’s gap closes the connection and the runner resends from its ack', async () => {
    // The second frame with log lines fails once, as a database error would.
    let logFrames = 0;
    let failed: number[] = [];
    frameHook = async (f: RunnerFrame, now: number) => {
      if (f.events.some((e) => e.type === 'log') && ++logFrames === 2) {
        failed = f.events.map((e) => e.rseq);
        throw new Error('simulated database error');
      }
      return base.applyRunnerFrame(f, now);
    };
    try {
      runner = await startRunner({
        serverUrl: server.url,
        registrationToken: await createRegistrationToken(base, { pool: 'gap' }, 60_000, Date.now()),
        workDir: join(dir, 'work'),
        name: 'gap-runner',
        labels: {},
        repoBaseDir: dir,
        graceMs: 2000,
        reconnect: { minMs: 20, maxMs: 100 },
        connectTimeoutMs: 5000,
      });
      const res = await fetch(`${server.url}/api/jobs`, { method: 'POST', headers: { authorization: `Bearer ${server.adminToken}`, 'content-type': 'application/json' }, body: JSON.stringify({ agent: 'chatty', input: {} }) });
      expect(res.status).toBe(201);
      const job = (await res.json()) as Job;
      const done = await waitFor(() => base.getJob(job.id), (j) => j?.status === 'succeeded' || j?.status === 'failed');
      expect(done?.status).toBe('succeeded');
      expect(failed.length).toBeGreaterThan(0);
      const events: JobEvent[] = await base.listEvents(job.id, 0, 10_000);
      const lines = events.filter((e) => e.type === 'log').map((e) => (e.type === 'log' ? e.data.line : ''));
      expect(lines).toEqual(Array.from({ length: LINES }, (_, i) => `line ${i + 1}`));
      expect(events.map((e) => e.seq)).toEqual(Array.from({ length: events.length }, (_, i) => i + 1));
      expect(events.at(-1)?.type).toBe('job.finished');
      // The runner was told about the gap and came back.
      const history = (await base.listRunnerEvents((await base.listRunners()).find((r) => r.name === 'gap-runner')!.id, 50)).map((e) => e.kind);
      expect(history.filter((k) => k === 'connected').length).toBeGreaterThanOrEqual(2);
    } finally {
      frameHook = null;
    }
  }, 60_000);
});
