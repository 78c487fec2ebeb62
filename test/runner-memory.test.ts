/**
 * Issue 4: "20 jobs in a row leave no process and no growth in the runner's memory". A real
 * runner process (`flotilla runner`, from dist/: run `npx tsc -p tsconfig.build.json` first)
 * against a real control plane (in this process, scripted model) runs 15 warm-up jobs and then
 * 20 more of the Python command agent `hello-py` (two model calls, a file write each). Its
 * resident memory (/proc/PID/status VmRSS) after the 20 is compared with after the warm-up,
 * and no process of any of the jobs is left (none carries a job's FLOTILLA_RUN marker, the
 * runner has no child). Figures are printed.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BIN, ROOT, spawnFlotilla, startPlane, tempDir, waitFor, type Plane } from './helpers.js';

/** Warm-up jobs first: V8 grows its heap over the first ~20 jobs (measured: +7 MiB), then stays flat. */
const WARM_UP = 15;
/** Jobs measured after the warm-up (FLOTILLA_MEM_JOBS overrides, for a longer look). */
const MEASURED = Number(process.env.FLOTILLA_MEM_JOBS ?? 20);
/** Allowed RSS growth over the measured jobs, KiB: generous (GC timing alone moves RSS by MBs). */
const MAX_GROWTH_KIB = 24 * 1024;

/** VmRSS of `pid`, KiB. */
function rssKib(pid: number): number {
  const m = /^VmRSS:\s+(\d+)\s+kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  if (!m) throw new Error(`no VmRSS for ${pid}`);
  return Number(m[1]);
}

/**
 * Pids whose environment carries FLOTILLA_RUN=<jobId>.<attempt>.… for one of `jobIds` and
 * mentions `workDir` (its HOME is there): other suites running at once have jobs with the same ids.
 */
function jobProcesses(jobIds: Set<number>, workDir: string): number[] {
  const found: number[] = [];
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    let env: string;
    try {
      env = readFileSync(`/proc/${d}/environ`, 'latin1');
    } catch {
      continue; // gone, or not ours
    }
    const m = /(?:^|\0)FLOTILLA_RUN=(\d+)\./.exec(env);
    if (m && jobIds.has(Number(m[1])) && env.includes(workDir)) found.push(Number(d));
  }
  return found;
}

/** Direct children of `pid`. */
function childrenOf(pid: number): number[] {
  const out: number[] = [];
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const stat = readFileSync(`/proc/${d}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === pid) out.push(Number(d));
    } catch {
      /* gone */
    }
  }
  return out;
}

describe.skipIf(!existsSync('/proc/self/status') || !existsSync(join(ROOT, 'dist', 'cli', 'main.js')))(`a real runner process through ${WARM_UP + MEASURED} jobs`, () => {
  const dir = tempDir('flotilla-mem-');
  let plane: Plane;
  let runner: ReturnType<typeof spawnFlotilla>;
  beforeAll(async () => {
    plane = await startPlane({ dataDir: join(dir.path, 'data'), heartbeatIntervalMs: 1000, heartbeatTimeoutMs: 10_000 });
    runner = spawnFlotilla(['runner', '--server', plane.url, '--token', await plane.registrationToken(), '--work-dir', join(dir.path, 'runner'), '--repo-base', ROOT, '--name', 'mem-runner'], {});
    await waitFor('the runner to connect', async () => (await plane.client.listRunners()).some((r) => r.name === 'mem-runner' && r.status === 'online'), 30_000, 100);
  }, 60_000);
  afterAll(async () => {
    if (runner && runner.exitCode === null) {
      runner.kill('SIGTERM');
      await new Promise((r) => runner.once('exit', r));
    }
    await plane?.close();
    dir.cleanup();
  });

  it(`${WARM_UP} warm-up jobs, then ${MEASURED} more: RSS growth under ${MAX_GROWTH_KIB / 1024} MiB, no job process left`, async () => {
    expect(BIN).toMatch(/flotilla\.js$/);
    const pid = runner.pid!;
    const ids = new Set<number>();
    const runOne = async () => {
      const created = await plane.client.createJob({ agent: 'hello-py', input: {}, priority: 0 });
      ids.add(created.id);
      const job = await waitFor(`job ${created.id} to end`, async () => {
        const j = await plane.client.getJob(created.id);
        return ['succeeded', 'failed', 'cancelled', 'lost'].includes(j.status) ? j : null;
      }, 60_000, 50);
      expect(job.status, `${job.id}: ${job.error ?? ''}`).toBe('succeeded');
    };
    const start = rssKib(pid);
    for (let i = 0; i < WARM_UP; i++) await runOne();
    await new Promise((r) => setTimeout(r, 500));
    const warm = rssKib(pid);
    const samples: number[] = [];
    for (let i = 0; i < MEASURED; i++) {
      await runOne();
      samples.push(rssKib(pid));
    }
    await new Promise((r) => setTimeout(r, 500));
    const end = rssKib(pid);
    const growth = end - warm;
    console.log(
      `runner RSS every 10 jobs: ${samples.filter((_, i) => i % 10 === 9).join(', ')} KiB`,
    );
    console.log(
      `runner RSS: start ${start} KiB, after ${WARM_UP} warm-up jobs ${warm} KiB, after ${MEASURED} more ${end} KiB ` +
        `(growth ${growth} KiB = ${(growth / MEASURED).toFixed(0)} KiB/job; min ${Math.min(...samples)}, max ${Math.max(...samples)} KiB during)`,
    );
    expect(growth).toBeLessThan(MAX_GROWTH_KIB);
    // No process of any job is left, and the runner's one child is its job watchdog (one for
    // all jobs, started with the first: runner/watchdog.ts).
    expect(jobProcesses(ids, join(dir.path, 'runner'))).toEqual([]);
    const children = childrenOf(pid).map((c) => readFileSync(`/proc/${c}/cmdline`, 'utf8').split('\0').slice(1, 2).join(''));
    expect(children).toEqual([join(ROOT, 'dist', 'runner', 'watchdog-process.js')]);
    expect(ids.size).toBe(WARM_UP + MEASURED);
  }, 600_000);
});
