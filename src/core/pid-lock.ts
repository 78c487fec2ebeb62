import { closeSync, openSync, readFileSync, unlinkSync, writeSync } from 'node:fs';

/**
 * One process per folder: a lock file holding the holder's pid and its start time, created with
 * O_EXCL (the data folder's `flotilla.lock`, store/lock.ts; a runner work folder's
 * `runner.lock`, runner/work-lock.ts). A lock whose process is gone is taken over: dead, a zombie
 * (killed, not yet reaped — a supervisor that restarts at once after `kill -9` finds it so for
 * a moment, ~2 s where PID 1 reaps slowly), or its pid now another process's (the start time
 * written beside it differs: pids wrap around, a container restarts with the same pid).
 */

/** Lock files this process holds (a second holder in the same process is refused too). */
const held = new Set<string>();

/** A held lock; `release()` is idempotent. */
export interface PidLock {
  readonly file: string;
  release(): void;
}

/** Why a lock was refused: another live process (or this one, through another holder) has it. */
export class LockInUseError extends Error {
  constructor(
    readonly file: string,
    /** The holder's pid. */
    readonly pid: number,
    message: string,
  ) {
    super(message);
    this.name = 'LockInUseError';
  }
}

/**
 * Takes `file` for this process. Bounded: a stale lock taken over is tried again at most 5 times.
 * @param inUse the message of the error when a live process holds it (`self`: this process).
 * @throws LockInUseError with `inUse`'s message while a live process holds it; the file system's
 *   error (e.g. ENOENT when the folder takes no file, EACCES, EROFS) at once.
 */
export function lockPidFile(file: string, inUse: (pid: number, self: boolean) => string): PidLock {
  for (let tries = 0; ; tries++) {
    try {
      const fd = openSync(file, 'wx', 0o600);
      try {
        writeSync(fd, `${process.pid} ${processStartTime(process.pid) ?? ''}\n`);
      } finally {
        closeSync(fd);
      }
      held.add(file);
      return {
        file,
        release() {
          if (!held.delete(file)) return;
          try {
            if (lockHolder(file).pid === process.pid) unlinkSync(file);
          } catch {
            // already gone
          }
        },
      };
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST' || tries >= 5) throw e;
    }
    const holder = pidFileHolder(file);
    if (holder !== null) throw new LockInUseError(file, holder, inUse(holder, holder === process.pid));
    try {
      unlinkSync(file); // stale (its process is gone, or the file unreadable or half-written)
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
    }
  }
}

/**
 * The pid of the live process holding lock `file` (this one, when it holds it itself), or null
 * when nobody does (no file, or its process gone: {@link lockPidFile} would take it over).
 * Reads only: a check before a slow start, which takes the lock itself (cli/local/run-local.ts).
 */
export function pidFileHolder(file: string): number | null {
  const { pid, startTime } = lockHolder(file);
  if (pid === null) return null;
  if (pid === process.pid) return held.has(file) ? pid : null;
  return holderAlive(pid, startTime) ? pid : null;
}

/**
 * The start time of process `pid` (field 22 of /proc/PID/stat, clock ticks since boot), or null
 * when it cannot be read (no such process, not Linux). With the pid it names one process for
 * good: a later process with the same pid has another start time.
 */
export function processStartTime(pid: number): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] ?? null;
  } catch {
    return null;
  }
}

/** The pid and start time written in the lock file (start time null: an older lock of only a pid, or unreadable). */
function lockHolder(file: string): { pid: number | null; startTime: string | null } {
  try {
    const [pidText, start] = readFileSync(file, 'utf8').trim().split(/\s+/);
    const n = Number.parseInt(pidText ?? '', 10);
    return { pid: Number.isSafeInteger(n) && n > 0 ? n : null, startTime: start || null };
  } catch {
    return { pid: null, startTime: null };
  }
}

/**
 * Whether process `pid` (started at `startTime`, from {@link processStartTime}; null: any start)
 * still lives: its pid exists (EPERM: it exists but is not ours), is not a zombie (killed, not
 * yet reaped), and has that start time (not another process that got the pid since).
 */
export function holderAlive(pid: number, startTime: string | null): boolean {
  try {
    process.kill(pid, 0);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  if (process.platform !== 'linux') return true;
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return true; // not readable here: trust kill(0)
  }
  const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
  if (state === 'Z' || state === 'X') return false;
  return startTime === null || processStartTime(pid) === startTime;
}
