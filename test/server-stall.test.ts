// The server's own stall and the liveness sweep. When the server's event loop is blocked longer
// than the heartbeat timeout (a long synchronous read of SQLite, a GC pause on a loaded machine),
// Node runs its due timers before it reads the sockets: the sweep found every runner "silent"
// whose heartbeats were waiting unread, marked it offline and closed its connection (a runner
// read `offline` in test/runner-flood.test.ts after the test read 200,000 events in one go).
// A runner is silent only after the timeout of time the server was awake to hear it. (A runner
// running a job gives it up by its own lease when no heartbeat is confirmed for 0.7 of the
// timeout, runner/lease.ts: the runner cannot tell a stalled server from a lost one.)
// A real server (SQLite), heartbeat timeout 1 s, and a real idle runner in this process; the
// stall is a 2.5 s busy loop.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../src/core/log.js';
import { startRunner, type RunningRunner } from '../src/runner/runner.js';
import { startTestServer, type TestServer } from '../src/server/test-helpers.js';

const TIMEOUT_MS = 1000;

describe('the server stalls longer than the heartbeat timeout', () => {
  let t: TestServer;
  let runner: RunningRunner;
  let dir: string;
  const warnings: string[] = [];

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'flotilla-stall-'));
    const log = createLogger('warn', (line) => void warnings.push(line));
    t = await startTestServer({ log, heartbeatIntervalMs: 200, heartbeatTimeoutMs: TIMEOUT_MS, sweepIntervalMs: 100 });
    runner = await startRunner({ serverUrl: t.url, registrationToken: await t.regToken(), workDir: join(dir, 'work'), name: 'steady', capacity: 1, reconnect: { minMs: 20, maxMs: 100 } });
  });
  afterAll(async () => {
    await runner?.stop();
    await t?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const status = async () => ((await (await t.api('/api/runners')).json()) as { runners: Array<{ name: string; status: string }> }).runners.find((r) => r.name === 'steady')?.status;

  it('keeps a runner that heartbeats online, its connection open', async () => {
    // past the start-up grace (the timeout), with heartbeats going
    await new Promise((r) => setTimeout(r, TIMEOUT_MS + 300));
    expect(await status()).toBe('online');
    const end = Date.now() + 2.5 * TIMEOUT_MS;
    while (Date.now() < end) {
      // blocked: no timer, no socket read
    }
    // several sweeps and heartbeats later
    await new Promise((r) => setTimeout(r, 600));
    expect(await status()).toBe('online');
    expect(warnings.filter((l) => l.includes('silent runner'))).toEqual([]);
  }, 30_000);
});
