import { describe, expect, it } from 'vitest';
import { existsSync, mkdtempSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { makeDir, MakeDirError } from './make-dir.js';

describe('makeDir', () => {
  it('makes a folder and the missing ones above it, with the mode; a folder already there is fine', async () => {
    const base = mkdtempSync(join(tmpdir(), 'flotilla-mkdir-'));
    const deep = join(base, 'a', 'b', 'c');
    await makeDir(deep, 0o700);
    expect(statSync(deep).isDirectory()).toBe(true);
    expect(statSync(join(base, 'a')).mode & 0o777).toBe(0o700);
    await makeDir(deep, 0o700);
    await makeDir(base);
  });

  it.runIf(existsSync('/proc/self'))('fails at once under /proc, where Node’s recursive mkdir spins for ever', async () => {
    const started = Date.now();
    const err = await makeDir('/proc/nope/a').catch((e: unknown) => e);
    expect(Date.now() - started).toBeLessThan(2000);
    expect(err).toBeInstanceOf(MakeDirError);
    expect(err).toMatchObject({
      path: '/proc/nope',
      code: 'ENOENT',
      message: 'cannot create folder /proc/nope: ENOENT: no such file or directory (its parent /proc exists, but takes no new folder)',
    });
    // An existing /proc folder takes no sub-folder either.
    await expect(makeDir('/proc/self/x')).rejects.toMatchObject({ path: '/proc/self/x', code: 'ENOENT' });
  });

  it('a file in the way, a dangling symlink: the OS error, naming the folder', async () => {
    const base = mkdtempSync(join(tmpdir(), 'flotilla-mkdir-'));
    writeFileSync(join(base, 'f'), '');
    await expect(makeDir(join(base, 'f'))).rejects.toMatchObject({ code: 'ENOTDIR', message: `cannot create folder ${join(base, 'f')}: ENOTDIR: ${join(base, 'f')} exists and is not a folder` });
    await expect(makeDir(join(base, 'f', 'x'))).rejects.toMatchObject({ code: 'ENOTDIR', message: `cannot create folder ${join(base, 'f', 'x')}: ENOTDIR: not a directory` });
    symlinkSync(join(base, 'gone'), join(base, 'link'));
    await expect(makeDir(join(base, 'link'))).rejects.toMatchObject({
      code: 'ENOENT',
      path: join(base, 'link'),
      message: `cannot create folder ${join(base, 'link')}: ENOENT: no such file or directory (${join(base, 'link')} is a symbolic link to a missing or looping target)`,
    });
  });
});

describe('the callers that make a folder a user names', () => {
  it('startRunner, openStore and the admin token fail at once on /proc/nope (Node recursive mkdir would spin)', async () => {
    const { startRunner } = await import('../runner/runner.js');
    const { openStore } = await import('../store/open.js');
    await expect(startRunner({ serverUrl: 'http://127.0.0.1:9', registrationToken: 'flr_x', workDir: '/proc/nope/work' })).rejects.toThrow(/cannot create folder \/proc\/nope/);
    await expect(openStore({ dataDir: '/proc/nope/data' })).rejects.toThrow(/cannot create folder \/proc\/nope/);
  }, 10_000);
});
