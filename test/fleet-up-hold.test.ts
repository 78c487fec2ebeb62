// Issue 5: `flotilla up --hold-new-runners 15m` (FLOTILLA_HOLD_NEW_RUNNERS) holds each newly
// registered runner that long (status provisioning) — but never the stack's own local runner.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { main } from '../src/cli/main.js';
import { recordingIO } from '../src/cli/test-io.js';
import { startLocalStack, type LocalStack } from '../src/cli/local/stack.js';
import { createRegistrationToken } from '../src/server/auth.js';
import { silentLogger } from '../src/core/log.js';
import { TEST_GATEWAY } from '../src/server/test-helpers.js';

const HOLD = 15 * 60_000;
let dir: string;
let stack: LocalStack;
beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'flotilla-up-hold-'));
  stack = await startLocalStack({ data: dir, port: 0, agentsDirs: [], gateway: TEST_GATEWAY, newRunnerHoldMs: HOLD, repoBaseDir: dir, log: silentLogger });
});
afterAll(async () => {
  await stack?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('up --hold-new-runners', () => {
  it('holds a runner registering from elsewhere, not the local one', async () => {
    const local = await stack.store.getRunner(stack.runner!.runnerId);
    expect(local?.hold).toBeNull();
    const token = await createRegistrationToken(stack.store, {}, 60_000, Date.now());
    const t0 = Date.now();
    const res = await fetch(`${stack.server.url}/api/runners/register`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ token, name: 'remote', capacity: 1 }) });
    expect(res.status).toBe(201);
    const { runnerId } = (await res.json()) as { runnerId: number };
    const remote = await stack.store.getRunner(runnerId);
    expect(remote?.hold).toMatchObject({ kind: 'provisioning', reason: 'new runner: finishing its setup' });
    expect(remote!.hold!.until - t0).toBeGreaterThanOrEqual(HOLD);
    expect(remote!.hold!.until - Date.now()).toBeLessThanOrEqual(HOLD);
  });

  it('a bad duration is refused before anything starts (exit 2), from the flag and from the env var', async () => {
    const io = recordingIO();
    expect(await main(['node', 'flotilla', 'up', '--hold-new-runners', '1w', '--data', join(dir, 'never')], io)).toBe(2);
    expect(io.err()).toContain('--hold-new-runners must be a duration like 90s, 15m, 1h or 2d (at most 30d), or off; got "1w"');
    process.env.FLOTILLA_HOLD_NEW_RUNNERS = 'soon';
    try {
      const io2 = recordingIO();
      expect(await main(['node', 'flotilla', 'up', '--data', join(dir, 'never')], io2)).toBe(2);
      expect(io2.err()).toContain('got "soon"');
    } finally {
      delete process.env.FLOTILLA_HOLD_NEW_RUNNERS;
    }
  });
});
