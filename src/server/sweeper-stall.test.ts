// The server's own stall and the liveness sweep. When the server's event loop is blocked longer
// than the heartbeat timeout (a long synchronous read of SQLite, a GC pause on a loaded machine),
// Node runs its due timers before it reads the sockets: the sweep found every runner "silent"
// whose heartbeats were waiting unread, marked it offline and closed its connection (a runner
// read `offline` in test/runner-flood.test.ts after the test read 200,000 events in one go).
// A runner is silent only after the timeout of time the server was awake to hear it — and a
// runner that does go silent after a stall is still found (the first version of this passed a
// fractional cutoff, the store refused it, and every sweep failed for two timeouts: a fresh
// tester). A real server (SQLite, heartbeat timeout 1 s, sweep every 100 ms), a fake runner on a
// real WebSocket heartbeating every 150 ms; the stall is a 2.5 s busy loop.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../core/log.js';
import { FakeRunner, startTestServer, type TestServer } from './test-helpers.js';

const TIMEOUT_MS = 1000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('the server stalls longer than the heartbeat timeout', () => {
  let t: TestServer;
  const lines: string[] = [];

  beforeAll(async () => {
    const log = createLogger('warn', (line) => void lines.push(line));
    t = await startTestServer({ log, heartbeatIntervalMs: 200, heartbeatTimeoutMs: TIMEOUT_MS, sweepIntervalMs: 100 });
  });
  afterAll(() => t?.close());

  const status = async (name: string) => ((await (await t.api('/api/runners')).json()) as { runners: Array<{ name: string; status: string }> }).runners.find((r) => r.name === name)?.status;

  it('keeps a runner that heartbeats online, its connection open; one that then goes silent is found', async () => {
    const r = await FakeRunner.start(t, { name: 'steady' });
    await r.hello({ name: 'steady' });
    let beating = true;
    const timer = setInterval(() => beating && !r.closed && r.send({ type: 'heartbeat', running: [] }), 150);
    try {
      // past the start-up grace (the timeout), with heartbeats going
      await sleep(TIMEOUT_MS + 300);
      expect(await status('steady')).toBe('online');
      const end = Date.now() + 2.5 * TIMEOUT_MS;
      while (Date.now() < end) {
        // blocked: no timer, no socket read
      }
      // several sweeps and heartbeats later
      await sleep(600);
      expect(await status('steady')).toBe('online');
      expect(r.closeCode).toBeNull();
      expect(lines.filter((l) => l.includes('silent runner') || l.includes('sweep failed'))).toEqual([]);

      // now it goes silent: found by the timeout plus the stall still counted (two timeouts from its end), never failing a sweep
      beating = false;
      const silentAt = Date.now();
      for (let i = 0; i < 100 && (await status('steady')) !== 'offline'; i++) await sleep(100);
      expect(await status('steady')).toBe('offline');
      expect(Date.now() - silentAt).toBeLessThan(TIMEOUT_MS + 2 * TIMEOUT_MS + 2500);
      for (let i = 0; i < 50 && r.closeCode === null; i++) await sleep(20);
      expect(r.closeCode).toBe(4408);
      expect(lines.filter((l) => l.includes('sweep failed'))).toEqual([]);
    } finally {
      clearInterval(timer);
      await r.close();
    }
  }, 30_000);
});
