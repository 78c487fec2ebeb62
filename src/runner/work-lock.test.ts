import { describe, expect, it } from 'vitest';
import { mkdtempSync, readFileSync, writeFileSync, existsSync } from 'node:fs';
import { spawn } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { lockWorkDir } from './work-lock.js';

describe('runner work folder lock', () => {
  it('one holder at a time in this process; released, it can be taken again', () => {
    const dir = mkdtempSync(join(tmpdir(), 'flotilla-wl-'));
    const a = lockWorkDir(dir);
    expect(readFileSync(join(dir, 'runner.lock'), 'utf8')).toBe(`${process.pid}\n`);
    expect(() => lockWorkDir(dir)).toThrow(`runner work folder ${dir} is in use by process ${process.pid} (this process); give each runner its own --work-dir`);
    a.release();
    a.release();
    expect(existsSync(join(dir, 'runner.lock'))).toBe(false);
    lockWorkDir(dir).release();
  });

  it('refuses a folder held by another live process, takes over from a dead one', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'flotilla-wl-'));
    const other = spawn('sleep', ['30'], { stdio: 'ignore' });
    writeFileSync(join(dir, 'runner.lock'), `${other.pid}\n`);
    expect(() => lockWorkDir(dir)).toThrow(`is in use by process ${other.pid};`);
    other.kill('SIGKILL');
    await new Promise((r) => other.once('exit', r));
    const l = lockWorkDir(dir);
    expect(readFileSync(join(dir, 'runner.lock'), 'utf8')).toBe(`${process.pid}\n`);
    l.release();
  });

  it.runIf(existsSync('/proc/self'))('a folder that takes no file (/proc/self): fails at once, naming the lock file and the OS error', () => {
    expect(() => lockWorkDir('/proc/self')).toThrow(/^cannot create the lock file \/proc\/self\/runner\.lock of the runner work folder: ENOENT: no such file or directory$/);
  });
});
