import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { silentLogger } from '../core/log.js';
import { processStartTime } from '../core/pid-lock.js';
import { makeZombie } from '../core/test-zombie.js';
import { forgetGroup, killOrphans, recordGroup } from './orphans.js';
import { groupAlive, spawnGroup } from './process.js';

let tmp: string;
beforeEach(() => {
  tmp = mkdtempSync(join(tmpdir(), 'flotilla-orphans-'));
});
afterEach(() => rmSync(tmp, { recursive: true, force: true }));

const env = { PATH: process.env.PATH ?? '/usr/bin:/bin' };

describe('orphan process groups', () => {
  it('kills recorded groups that still run and removes the records', async () => {
    const p = spawnGroup('sh', ['-c', 'sleep 300 & wait'], { cwd: '/', env });
    await recordGroup(tmp, 3, 1, p.pid);
    expect(readdirSync(join(tmp, 'pids'))).toEqual(['job-3-1.json']);
    expect(groupAlive(p.pid)).toBe(true);
    expect(await killOrphans(tmp, 500, silentLogger)).toEqual([p.pid]);
    expect(groupAlive(p.pid)).toBe(false);
    expect(readdirSync(join(tmp, 'pids'))).toEqual([]);
  });

  it('does not kill a process whose pid was reused (start time differs)', async () => {
    const p = spawnGroup('sleep', ['300'], { cwd: '/', env });
    writeFileSync(join(tmp, 'x'), '');
    await recordGroup(tmp, 4, 1, p.pid);
    const file = join(tmp, 'pids', 'job-4-1.json');
    writeFileSync(file, JSON.stringify({ pgid: p.pid, startTime: '1', jobId: 4, attempt: 1 }));
    expect(await killOrphans(tmp, 500, silentLogger)).toEqual([]);
    expect(groupAlive(p.pid)).toBe(true);
    expect(existsSync(file)).toBe(false);
    await p.kill(500);
  });

  it('leaves a group whose runner process is alive (records copied with a work folder): only the record goes', async () => {
    const job = spawnGroup('sleep', ['300'], { cwd: '/', env });
    const otherRunner = spawnGroup('sleep', ['300'], { cwd: '/', env });
    const stat = (pid: number) => {
      const t = readFileSync(`/proc/${pid}/stat`, 'utf8');
      return t.slice(t.lastIndexOf(')') + 2).split(' ')[19];
    };
    mkdirSync(join(tmp, 'pids'));
    const file = join(tmp, 'pids', 'job-6-1.json');
    writeFileSync(file, JSON.stringify({ pgid: job.pid, startTime: stat(job.pid), jobId: 6, attempt: 1, runnerPid: otherRunner.pid, runnerStartTime: stat(otherRunner.pid) }));
    expect(await killOrphans(tmp, 500, silentLogger)).toEqual([]);
    expect(groupAlive(job.pid)).toBe(true);
    expect(existsSync(file)).toBe(false);
    // Once that runner is gone, the same record names an orphan.
    await otherRunner.kill(500);
    writeFileSync(file, JSON.stringify({ pgid: job.pid, startTime: stat(job.pid), jobId: 6, attempt: 1, runnerPid: otherRunner.pid, runnerStartTime: '1' }));
    expect(await killOrphans(tmp, 500, silentLogger)).toEqual([job.pid]);
    expect(groupAlive(job.pid)).toBe(false);
  });

  it.runIf(existsSync('/proc/self'))('a record whose runner is a zombie (killed, not yet reaped: a restart at once after kill -9) names an orphan', async () => {
    const job = spawnGroup('sleep', ['300'], { cwd: '/', env });
    const zombie = await makeZombie();
    try {
      mkdirSync(join(tmp, 'pids'));
      writeFileSync(join(tmp, 'pids', 'job-7-1.json'), JSON.stringify({ pgid: job.pid, startTime: processStartTime(job.pid), jobId: 7, attempt: 1, runnerPid: zombie.pid, runnerStartTime: processStartTime(zombie.pid) }));
      expect(await killOrphans(tmp, 500, silentLogger)).toEqual([job.pid]);
      expect(groupAlive(job.pid)).toBe(false);
    } finally {
      zombie.parent.kill('SIGKILL');
    }
  });

  it('forgetGroup removes the record; nothing to do without records', async () => {
    await recordGroup(tmp, 5, 2, 999_999);
    await forgetGroup(tmp, 5, 2);
    expect(readdirSync(join(tmp, 'pids'))).toEqual([]);
    expect(await killOrphans(join(tmp, 'none'), 100, silentLogger)).toEqual([]);
  });
});
