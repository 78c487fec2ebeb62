import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startRunner, type RunnerOptions, type RunningRunner } from '../runner.js';
import { FakeControlPlane, type FakeControlPlaneOptions } from './fake-control-plane.js';

/** A real runner connected to a {@link FakeControlPlane}, in a temp folder of its own (see {@link startFakeFleet}). */
export interface FakeFleet {
  /** The temp folder: `work/` is the runner's work folder, `repos/` its repo base. */
  tmp: string;
  cp: FakeControlPlane;
  runner: RunningRunner;
  /** Stops the runner and the control plane, and removes the folder. */
  close(): Promise<void>;
}

/**
 * What the runner tests share: a fresh temp folder (`prefix`), a {@link FakeControlPlane}
 * heartbeating every 100 ms unless `cp` says otherwise, and a runner registered to it with a
 * fast reconnect (20–100 ms), `work/` as its work folder and `repos/` as its repo base; `runner`
 * options go on top (a name at least).
 */
export async function startFakeFleet(prefix: string, runner: Partial<RunnerOptions> & { name: string }, cp: FakeControlPlaneOptions = {}): Promise<FakeFleet> {
  const tmp = mkdtempSync(join(tmpdir(), prefix));
  mkdirSync(join(tmp, 'repos'), { recursive: true });
  const plane = await new FakeControlPlane({ heartbeatIntervalMs: 100, ...cp }).listen();
  const started = await startRunner({
    serverUrl: plane.url,
    registrationToken: 'flr_testregistrationtoken',
    workDir: join(tmp, 'work'),
    repoBaseDir: join(tmp, 'repos'),
    reconnect: { minMs: 20, maxMs: 100 },
    ...runner,
  });
  return {
    tmp,
    cp: plane,
    runner: started,
    async close() {
      await started.stop();
      await plane.close();
      rmSync(tmp, { recursive: true, force: true });
    },
  };
}
