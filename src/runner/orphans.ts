import { mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from '../core/log.js';
import { holderAlive, processStartTime } from '../core/pid-lock.js';
import { groupAlive, killGroup } from './process.js';

/**
 * Records of running harness process groups in `<workDir>/pids/`, so that a runner that was
 * killed (SIGKILL, crash) and started again kills what its previous life left running:
 * harness groups are detached and would otherwise outlive it.
 */

interface PidRecord {
  pgid: number;
  /** Linux start time of the leader (clock ticks since boot, /proc/<pid>/stat field 22), to detect pid reuse. */
  startTime: string | null;
  jobId: number;
  attempt: number;
  /**
   * The runner process that started the group, and its start time: a group whose runner is
   * still alive is no orphan (a work folder copied with its records, started as a second
   * runner, must not kill the first runner's jobs). Absent in records of older runners.
   */
  runnerPid?: number;
  runnerStartTime?: string | null;
}

const dirOf = (workDir: string) => join(workDir, 'pids');
const fileOf = (workDir: string, jobId: number, attempt: number) => join(dirOf(workDir), `job-${jobId}-${attempt}.json`);

/** Notes that job `jobId` attempt `attempt` runs in process group `pgid`. */
export async function recordGroup(workDir: string, jobId: number, attempt: number, pgid: number): Promise<void> {
  await mkdir(dirOf(workDir), { recursive: true });
  const rec: PidRecord = { pgid, startTime: processStartTime(pgid), jobId, attempt, runnerPid: process.pid, runnerStartTime: processStartTime(process.pid) };
  await writeFile(fileOf(workDir, jobId, attempt), JSON.stringify(rec));
}

/** Forgets the record (the group is gone). */
export async function forgetGroup(workDir: string, jobId: number, attempt: number): Promise<void> {
  await rm(fileOf(workDir, jobId, attempt), { force: true });
}

/**
 * Kills every recorded group that still exists (SIGTERM, `graceMs`, SIGKILL) and removes the
 * records. A record whose pid now belongs to another process (different start time), or whose
 * runner process is still alive (another live runner's job: the records came with a copied work
 * folder), is only removed. Returns the process group ids killed.
 */
export async function killOrphans(workDir: string, graceMs: number, log: Logger): Promise<number[]> {
  let names: string[];
  try {
    names = await readdir(dirOf(workDir));
  } catch {
    return [];
  }
  const killed: number[] = [];
  await Promise.all(
    names
      .filter((n) => n.endsWith('.json'))
      .map(async (name) => {
        const file = join(dirOf(workDir), name);
        try {
          const rec = JSON.parse(await readFile(file, 'utf8')) as PidRecord;
          const now = processStartTime(rec.pgid);
          const reused = now !== null && rec.startTime !== null && now !== rec.startTime;
          const owner = runnerAlive(rec);
          if (owner) log.warn('a process record of another live runner process (a copied work folder?): its job is left alone', { jobId: rec.jobId, attempt: rec.attempt, runnerPid: rec.runnerPid });
          if (Number.isInteger(rec.pgid) && rec.pgid > 1 && !reused && !owner && groupAlive(rec.pgid)) {
            log.warn('killing a job process group left by a previous runner process', { jobId: rec.jobId, attempt: rec.attempt, pgid: rec.pgid });
            await killGroup(rec.pgid, graceMs);
            killed.push(rec.pgid);
          }
        } catch (err) {
          log.warn('could not read a process record', { file, error: (err as Error).message });
        }
        await rm(file, { force: true });
      }),
  );
  return killed;
}

/** Whether the record's runner process is alive and not this one (same pid and start time; a zombie — killed, not yet reaped — is not). */
function runnerAlive(rec: PidRecord): boolean {
  const pid = rec.runnerPid;
  if (typeof pid !== 'number' || !Number.isInteger(pid) || pid <= 1 || pid === process.pid) return false;
  return typeof rec.runnerStartTime === 'string' && holderAlive(pid, rec.runnerStartTime);
}
