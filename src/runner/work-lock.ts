import { openSync, readFileSync, unlinkSync, writeSync, closeSync } from 'node:fs';
import { join } from 'node:path';
import { processStartTime } from './orphans.js';

/** Lock files held by this process (a second runner in the same process is refused too). */
const held = new Set<string>();

/** A held work-folder lock; `release()` is idempotent. */
export interface WorkLock {
  readonly file: string;
  release(): void;
}

/**
 * Takes the runner work folder for this process: `<dir>/runner.lock` holding our pid, created
 * with O_EXCL. Two runners on one folder would share one credential (the server would see
 * one runner flapping between two connections) and the second would kill the first one's job
 * processes as "orphans" at start. A lock whose process is gone (dead, a zombie, or its pid now
 * another process's: the start time written beside it differs) is taken over.
 * Bounded: a lock taken over is tried again at most 5 times; any error other than EEXIST
 * (the folder takes no file: ENOENT under /proc, EACCES, EROFS) fails at once.
 * @throws Error "runner work folder DIR is in use by process N" while a live process holds it;
 *   "cannot create the lock file DIR/runner.lock of the runner work folder: ENOENT: ..." when
 *   the folder takes no file.
 */
export function lockWorkDir(dir: string): WorkLock {
  const file = join(dir, 'runner.lock');
  for (let tries = 0; ; tries++) {
    try {
      const fd = openSync(file, 'wx', 0o600);
      try {
        // The pid and its start time: a pid alone may belong to another process after a reboot
        // or once pids wrap around (a stale lock must not keep the runner from starting).
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
            unlinkSync(file);
          } catch {
            // already gone
          }
        },
      };
    } catch (e) {
      const err = e as NodeJS.ErrnoException;
      if (err.code !== 'EEXIST') {
        throw Object.assign(new Error(`cannot create the lock file ${file} of the runner work folder: ${err.message.replace(/, open '[^']*'$/, '')}`), { code: err.code });
      }
      if (tries >= 5) throw e;
    }
    const { pid, startTime } = lockHolder(file);
    if (pid !== null && (pid === process.pid ? held.has(file) : holderAlive(pid, startTime))) {
      throw new Error(`runner work folder ${dir} is in use by process ${pid}${pid === process.pid ? ' (this process)' : ''}; give each runner its own --work-dir`);
    }
    try {
      unlinkSync(file); // stale: its process is gone
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
    }
  }
}

/** The pid and start time written in the lock file (start time null: an older runner's lock, or unreadable). */
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
 * Whether the process that wrote the lock still lives: its pid exists, is not a zombie (killed,
 * not yet reaped: a runner started again at once after `kill -9`), and — when the lock names a
 * start time — still has that start time (not another process that got the pid since).
 */
function holderAlive(pid: number, startTime: string | null): boolean {
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
