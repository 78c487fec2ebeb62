import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createLogger, type Logger } from '../core/log.js';
import { startRunner, type RunningRunner } from './runner.js';
import { FakeControlPlane } from './testdata/fake-control-plane.js';

/**
 * What a `welcome` says the runner did not get (its name belongs to another runner, a label its
 * registration token binds otherwise) is warned once per runner process, not on every reconnect.
 */
describe('welcome warnings', () => {
  let tmp: string;
  let cp: FakeControlPlane;
  let runner: RunningRunner | undefined;
  beforeEach(async () => {
    tmp = mkdtempSync(join(tmpdir(), 'flotilla-welcome-'));
    cp = await new FakeControlPlane({
      heartbeatIntervalMs: 100,
      welcomeExtra: { name: 'box-2', ignoredLabels: [{ key: 'zone', asked: 'eu', bound: 'us' }] },
    }).listen();
  });
  afterEach(async () => {
    await runner?.stop();
    await cp.close();
    rmSync(tmp, { recursive: true, force: true });
  });

  it('the name and label warnings come once over three connections', async () => {
    const warnings: string[] = [];
    const base = createLogger('silent');
    const log: Logger = { ...base, warn: (msg) => void warnings.push(msg), child: () => log };
    runner = await startRunner({
      serverUrl: cp.url,
      registrationToken: 'flr_testregistrationtoken',
      workDir: join(tmp, 'work'),
      name: 'box',
      labels: { zone: 'eu' },
      repoBaseDir: tmp,
      reconnect: { minMs: 20, maxMs: 100 },
      connectTimeoutMs: 3000,
      log,
    });
    await cp.waitFor(() => cp.hellos.length === 1, 5000, 'the first hello');
    for (const n of [2, 3]) {
      await cp.waitFor(() => cp.connected, 5000, 'a connection');
      cp.dropConnection();
      await cp.waitFor(() => cp.hellos.length === n, 5000, `hello ${n}`);
    }
    const at = cp.frames.length;
    await cp.waitFor(() => cp.frames.slice(at).some((f) => f.type === 'heartbeat'), 5000, 'a heartbeat after the last welcome');
    expect(warnings.filter((w) => w.startsWith('runner name box belongs to another runner'))).toEqual([
      'runner name box belongs to another runner: this runner keeps the name box-2 (start it with --name box-2, or revoke the other runner to free the name)',
    ]);
    expect(warnings.filter((w) => w.startsWith('label zone='))).toEqual(["label zone=eu ignored: this runner's registration token binds zone=us"]);
  });
});
