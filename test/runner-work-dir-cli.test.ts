/**
 * A work or data folder that cannot be made (under /proc, where Node's own recursive mkdir spins
 * for ever at full CPU and the process ignores SIGTERM): `flotilla runner`, `flotilla up` and
 * `flotilla run --local` stop at once, exit 1, naming the folder and the OS error.
 */
import { existsSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { spawnFlotilla } from './helpers.js';

/** Runs `flotilla ARGS` as a process; SIGKILL (it may ignore SIGTERM) when it has not ended within `ms`. */
async function flotilla(args: string[], ms = 10_000): Promise<{ code: number | null; output: string; killed: boolean }> {
  const child = spawnFlotilla(args, { FLOTILLA_LOG_LEVEL: 'error' });
  let killed = false;
  const timer = setTimeout(() => {
    killed = true;
    child.kill('SIGKILL');
  }, ms);
  const code = await new Promise<number | null>((resolve) => child.once('exit', (c) => resolve(c)));
  clearTimeout(timer);
  return { code, output: child.output(), killed };
}

const ENOENT_UNDER_PROC = 'cannot create folder /proc/nope: ENOENT: no such file or directory (its parent /proc exists, but takes no new folder)';

describe.runIf(existsSync('/proc/self'))('a folder that cannot be made', () => {
  it('flotilla runner --work-dir /proc/nope: exit 1 at once, naming the folder and the OS error', async () => {
    const r = await flotilla(['runner', '--token', 'flr_x', '--work-dir', '/proc/nope', '--server', 'http://127.0.0.1:9']);
    expect(r.killed).toBe(false);
    expect(r).toMatchObject({ code: 1, output: `flotilla: --work-dir /proc/nope: ${ENOENT_UNDER_PROC}\n` });
  });

  it('flotilla runner --work-dir /proc/self (there, but takes no file): exit 1 naming the lock file', async () => {
    const r = await flotilla(['runner', '--token', 'flr_x', '--work-dir', '/proc/self', '--server', 'http://127.0.0.1:9']);
    expect(r.killed).toBe(false);
    expect(r).toMatchObject({ code: 1, output: 'flotilla: cannot create the lock file /proc/self/runner.lock of the runner work folder: ENOENT: no such file or directory\n' });
  });

  it('flotilla up / run --local --data /proc/nope: exit 1 at once, naming the folder', async () => {
    const up = await flotilla(['up', '--data', '/proc/nope', '--port', '0']);
    expect(up.killed).toBe(false);
    expect(up).toMatchObject({ code: 1, output: `flotilla: --data /proc/nope: ${ENOENT_UNDER_PROC}\n` });
    const local = await flotilla(['run', '--local', 'test-fixer', '{"repo":"examples/calc"}', '--data', '/proc/nope']);
    expect(local.killed).toBe(false);
    expect(local.code).toBe(1);
    expect(local.output).toContain(`flotilla: --data /proc/nope: ${ENOENT_UNDER_PROC}\n`);
  });
});
