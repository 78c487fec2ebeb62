import { openSync, readFileSync, unlinkSync, writeSync, closeSync } from 'node:fs';
import { join } from 'node:path';

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
 * processes as "orphans" at start. A lock whose pid is dead is taken over.
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
        writeSync(fd, `${process.pid}\n`);
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
    const pid = lockPid(file);
    if (pid !== null && (pid === process.pid ? held.has(file) : pidAlive(pid))) {
      throw new Error(`runner work folder ${dir} is in use by process ${pid}${pid === process.pid ? ' (this process)' : ''}; give each runner its own --work-dir`);
    }
    try {
      unlinkSync(file); // stale: its process is gone
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
    }
  }
}

function lockPid(file: string): number | null {
  try {
    const n = Number.parseInt(readFileSync(file, 'utf8').trim(), 10);
    return Number.isSafeInteger(n) && n > 0 ? n : null;
  } catch {
    return null;
  }
}

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}
