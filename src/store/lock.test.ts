/**
 * The data folder's lock (`<data>/flotilla.lock`, core/pid-lock.ts) is taken over from a
 * process that is gone although its pid still answers: a zombie not yet reaped (`flotilla up`
 * started again at once after `kill -9`: a fresh-user tester saw "data folder ... is in use by
 * process N" for ~2 s, 3 times in 3), or a pid now another process's. A live holder keeps it.
 */
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { processStartTime } from '../core/pid-lock.js';
import { makeZombie } from '../core/test-zombie.js';
import { dataFolderInUse, lockDataFolder } from './lock.js';

describe.runIf(existsSync('/proc/self'))('lockDataFolder', () => {
  it('a zombie holder (with or without its start time) holds nothing', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'flotilla-dl-'));
    const { pid: zombie, parent } = await makeZombie();
    try {
      writeFileSync(join(dir, 'flotilla.lock'), `${zombie} ${processStartTime(zombie)}\n`);
      lockDataFolder(dir).release();
      // a lock written by an older version: the pid alone
      writeFileSync(join(dir, 'flotilla.lock'), `${zombie}\n`);
      const l = lockDataFolder(dir);
      expect(readFileSync(l.file, 'utf8')).toBe(`${process.pid} ${processStartTime(process.pid)}\n`);
      l.release();
      expect(existsSync(join(dir, 'flotilla.lock'))).toBe(false);
    } finally {
      parent.kill('SIGKILL');
    }
  });

  it('dataFolderInUse reads who holds it, taking nothing: a live process (its message), nobody or a stale holder (null)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'flotilla-dl-'));
    expect(dataFolderInUse(dir)).toBeNull(); // no lock file
    writeFileSync(join(dir, 'flotilla.lock'), `1 ${processStartTime(1)}\n`);
    expect(dataFolderInUse(dir)).toBe(`data folder ${dir} is in use by process 1`);
    expect(readFileSync(join(dir, 'flotilla.lock'), 'utf8')).toBe(`1 ${processStartTime(1)}\n`); // left as it was
    writeFileSync(join(dir, 'flotilla.lock'), `1 123\n`); // pid 1 with another start time: gone
    expect(dataFolderInUse(dir)).toBeNull();
    const l = lockDataFolder(dir);
    expect(dataFolderInUse(dir)).toBe(`data folder ${dir} is in use by process ${process.pid} (this process)`);
    l.release();
    expect(dataFolderInUse(dir)).toBeNull();
  });

  it('a live holder keeps it; its pid with another start time is another process', () => {
    const dir = mkdtempSync(join(tmpdir(), 'flotilla-dl-'));
    writeFileSync(join(dir, 'flotilla.lock'), `1 ${processStartTime(1)}\n`);
    expect(() => lockDataFolder(dir)).toThrow(`data folder ${dir} is in use by process 1`);
    writeFileSync(join(dir, 'flotilla.lock'), `1 123\n`);
    lockDataFolder(dir).release();
  });
});
