/**
 * The job watchdog as a real process (the built dist/runner/watchdog-process.js) watching real
 * process groups: it stops them when its lease is not renewed, when the runner side closes it,
 * and when it was killed and started again; renewals keep them running.
 */
import { spawn } from 'node:child_process';
import { afterEach, describe, expect, it } from 'vitest';
import { createLogger } from '../core/log.js';
import { groupAlive } from './process.js';
import { jobProcesses } from './proc-tree.js';
import { JobWatchdog } from './watchdog.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const lines: string[] = [];
const log = createLogger('debug', (l) => void lines.push(l));
const spawned: number[] = [];
const dogs: JobWatchdog[] = [];

/** A `sleep 300` leading its own process group, marked FLOTILLA_RUN=`marker`. */
function group(marker: string): number {
  const c = spawn('sleep', ['300'], { detached: true, stdio: 'ignore', env: { PATH: process.env.PATH, FLOTILLA_RUN: marker } });
  c.unref();
  spawned.push(c.pid!);
  return c.pid!;
}

function dog(): JobWatchdog {
  const d = new JobWatchdog({ log });
  dogs.push(d);
  return d;
}

async function gone(pgid: number, withinMs: number): Promise<number> {
  const t0 = Date.now();
  while (groupAlive(pgid)) {
    if (Date.now() - t0 > withinMs) throw new Error(`group ${pgid} still alive after ${withinMs} ms`);
    await sleep(10);
  }
  return Date.now() - t0;
}

afterEach(() => {
  for (const d of dogs.splice(0)) d.close();
  for (const p of spawned.splice(0)) {
    try {
      process.kill(-p, 'SIGKILL');
    } catch {
      // gone
    }
  }
  lines.length = 0;
});

describe('job watchdog', () => {
  it('keeps renewed jobs running and stops them when renewals stop: SIGTERM at termInMs', async () => {
    const d = dog();
    d.renew(600, 900);
    const pg = group('1.1.aaaa');
    d.watch(pg, '1.1.aaaa');
    // Renewed every 200 ms for 1.5 s: past the first deadline, still running.
    for (let i = 0; i < 8; i++) {
      await sleep(200);
      d.renew(600, 900);
    }
    expect(groupAlive(pg)).toBe(true);
    // No more renewals: `sleep` dies on SIGTERM, so between 600 ms and 600 + poll + start slack.
    const took = await gone(pg, 3000);
    expect(took).toBeGreaterThanOrEqual(500);
    expect(took).toBeLessThan(1500);
    await sleep(200);
    expect(lines.some((l) => l.includes('job watchdog stopped a job') && l.includes(`pgid=${pg} `))).toBe(true);
  });

  it('deadlines are absolute: renewals a stopped watchdog reads late do not push them back', async () => {
    const d = dog();
    d.renew(600, 900);
    const pg = group('6.1.ffff');
    d.watch(pg, '6.1.ffff');
    await sleep(300);
    const pid = d.pid!;
    process.kill(pid, 'SIGSTOP');
    // Renewed while the watchdog cannot read: the last renewal at t1.
    for (let i = 0; i < 5; i++) {
      await sleep(200);
      d.renew(600, 900);
    }
    const t1 = Date.now();
    await sleep(400);
    process.kill(pid, 'SIGCONT');
    // Stopped 600 ms after t1 (SIGTERM ends `sleep`), not 600 ms after the watchdog read the line (t1 + 400).
    await gone(pg, 3000);
    const at = Date.now() - t1;
    expect(at).toBeGreaterThanOrEqual(550);
    expect(at).toBeLessThan(900);
  });

  it('a watchdog stopped past its deadline while the runner renewed leaves the job alone when it resumes', async () => {
    const d = dog();
    d.renew(600, 900);
    const pg = group('7.1.gggg');
    d.watch(pg, '7.1.gggg');
    await sleep(300);
    const pid = d.pid!;
    process.kill(pid, 'SIGSTOP');
    for (let i = 0; i < 8; i++) {
      await sleep(200);
      d.renew(600, 900);
    }
    // 1.6 s stopped, past its first deadline; the renewals wait in its pipe.
    process.kill(pid, 'SIGCONT');
    for (let i = 0; i < 5; i++) {
      await sleep(100);
      d.renew(600, 900);
    }
    expect(groupAlive(pg)).toBe(true);
    expect(lines.filter((l) => l.includes(`pgid=${pg} `))).toEqual([]);
  });

  it('also kills processes that left the group but carry the job marker', async () => {
    const d = dog();
    const pg = group('2.1.bbbb');
    const escaped = spawn('setsid', ['sleep', '300'], { detached: true, stdio: 'ignore', env: { PATH: process.env.PATH, FLOTILLA_RUN: '2.1.bbbb' } });
    escaped.unref();
    spawned.push(escaped.pid!);
    await sleep(100);
    expect(jobProcesses('2.1.bbbb').length).toBe(2);
    d.renew(100, 200);
    d.watch(pg, '2.1.bbbb');
    await gone(pg, 3000);
    await sleep(300);
    expect(jobProcesses('2.1.bbbb')).toEqual([]);
  });

  it('the runner side gone (stdin closed) stops the watched jobs at once, then the watchdog exits', async () => {
    const d = dog();
    d.renew(60_000, 61_000);
    const pg = group('3.1.cccc');
    d.watch(pg, '3.1.cccc');
    await sleep(300);
    const pid = d.pid!;
    expect(pid).toBeGreaterThan(0);
    d.close();
    expect(await gone(pg, 2000)).toBeLessThan(2000);
    await gone(pid, 2000); // its own group: the watchdog process itself
  });

  it('an unwatched group is left alone; with nothing watched, closing ends the watchdog', async () => {
    const d = dog();
    d.renew(100, 200);
    const pg = group('4.1.dddd');
    d.watch(pg, '4.1.dddd');
    d.unwatch(pg);
    await sleep(800);
    expect(groupAlive(pg)).toBe(true);
    const pid = d.pid!;
    d.close();
    await gone(pid, 2000);
    expect(groupAlive(pg)).toBe(true);
  });

  it('a killed watchdog is started again with what it watched and its deadlines', async () => {
    const d = dog();
    d.renew(1500, 1700);
    const pg = group('5.1.eeee');
    d.watch(pg, '5.1.eeee');
    await sleep(300);
    const first = d.pid!;
    process.kill(first, 'SIGKILL');
    const second = await (async () => {
      for (let i = 0; i < 100; i++) {
        if (d.pid && d.pid !== first) return d.pid;
        await sleep(20);
      }
      throw new Error('no second watchdog');
    })();
    expect(second).not.toBe(first);
    expect(groupAlive(pg)).toBe(true);
    // The first deadline (1.5 s after the renewal) still holds in the new process.
    await gone(pg, 3000);
    expect(lines.some((l) => l.includes('job watchdog exited; starting it again'))).toBe(true);
  });
});
