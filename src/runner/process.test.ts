import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { groupAlive, spawnGroup } from './process.js';

const env = { PATH: process.env.PATH ?? '/usr/bin:/bin' };

async function firstLine(p: ReturnType<typeof spawnGroup>): Promise<string> {
  return new Promise((resolve) => {
    let buf = '';
    p.stdout.on('data', (c: Buffer) => {
      buf += c.toString();
      if (buf.includes('\n')) resolve(buf.split('\n')[0] as string);
    });
  });
}

async function gone(pgid: number, withinMs: number): Promise<number> {
  const t0 = Date.now();
  for (;;) {
    try {
      process.kill(-pgid, 0);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ESRCH') return Date.now() - t0;
      throw err;
    }
    if (Date.now() - t0 > withinMs) throw new Error(`group ${pgid} still exists after ${withinMs} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('spawnGroup / kill', () => {
  it('runs the child in its own process group with stdin from /dev/null', async () => {
    const p = spawnGroup('sh', ['-c', 'ps -o pgid= -p $$; cat; echo "stdin done"'], { cwd: '/', env });
    let out = '';
    p.stdout.on('data', (c: Buffer) => (out += c.toString()));
    expect(await p.exited).toEqual({ code: 0, signal: null });
    await p.closed;
    expect(out.trim().split('\n').map((s) => s.trim())).toEqual([String(p.pid), 'stdin done']);
  });

  it('SIGTERM kills the leader and a grandchild; the group is gone well within the grace', async () => {
    const p = spawnGroup('sh', ['-c', 'sleep 300 & echo $!; wait'], { cwd: '/', env });
    const grandchild = Number(await firstLine(p));
    expect(groupAlive(p.pid)).toBe(true);
    const t0 = Date.now();
    await p.kill(5000);
    expect(Date.now() - t0).toBeLessThan(3000);
    expect(groupAlive(p.pid)).toBe(false);
    expect(zombie(grandchild)).toBe(true);
    expect(await p.exited).toEqual({ code: null, signal: 'SIGTERM' });
    await gone(p.pid, 5000);
  });

  it('SIGKILLs the group when SIGTERM is ignored, after the grace, descendants included', async () => {
    const p = spawnGroup('sh', ['-c', "trap '' TERM; sleep 300 & echo $!; while :; do sleep 0.05; done"], { cwd: '/', env });
    await firstLine(p);
    const t0 = Date.now();
    await p.kill(300);
    const took = Date.now() - t0;
    expect(took).toBeGreaterThanOrEqual(295);
    expect(took).toBeLessThan(3000);
    expect(groupAlive(p.pid)).toBe(false);
    expect((await p.exited).signal).toBe('SIGKILL');
    await gone(p.pid, 5000);
  });

  it('a later kill with a shorter grace shortens the kill under way (0: SIGKILL at once); a longer one does not lengthen it', async () => {
    const p = spawnGroup('sh', ['-c', "trap '' TERM; sleep 300 & echo $!; while :; do sleep 0.05; done"], { cwd: '/', env });
    await firstLine(p);
    const t0 = Date.now();
    const first = p.kill(10_000);
    await new Promise((r) => setTimeout(r, 100));
    expect(groupAlive(p.pid)).toBe(true); // SIGTERM ignored, grace running
    void p.kill(60_000);
    const second = p.kill(0);
    expect(second).toBe(first);
    await second;
    expect(Date.now() - t0).toBeLessThan(1000);
    expect((await p.exited).signal).toBe('SIGKILL');
    await gone(p.pid, 5000);
  });

  it('after a normal exit, stragglers still holding stdout are killed and the pipes close', async () => {
    const p = spawnGroup('sh', ['-c', 'sleep 300 & echo $!; exit 4'], { cwd: '/', env });
    const straggler = Number(await firstLine(p));
    expect((await p.exited).code).toBe(4);
    expect(groupAlive(p.pid)).toBe(true); // the straggler
    let closed = false;
    void p.closed.then(() => (closed = true));
    await new Promise((r) => setTimeout(r, 100));
    expect(closed).toBe(false);
    await p.kill(1000);
    await p.closed;
    expect(zombie(straggler)).toBe(true);
  });

  it('reports a missing executable as a spawn error', async () => {
    const p = spawnGroup('/no/such/binary', [], { cwd: '/', env });
    const e = await p.exited;
    expect(e.spawnError?.message).toMatch(/ENOENT/);
    await p.kill(100); // harmless
  });
});

/** True when `pid` is gone or a zombie (dead, not yet reaped). */
function zombie(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return true;
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z');
  } catch {
    return true;
  }
}
