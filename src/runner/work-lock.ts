import { join } from 'node:path';
import { lockPidFile, type PidLock } from '../core/pid-lock.js';

/** A held work-folder lock; `release()` is idempotent. */
export type WorkLock = PidLock;

/**
 * Takes the runner work folder for this process: `<dir>/runner.lock` holding our pid and its
 * start time, created with O_EXCL (core/pid-lock.ts). Two runners on one folder would share one credential (the server would see
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
  try {
    return lockPidFile(file, (pid, self) => `runner work folder ${dir} is in use by process ${pid}${self ? ' (this process)' : ''}; give each runner its own --work-dir`);
  } catch (e) {
    const err = e as NodeJS.ErrnoException;
    if (err.code === undefined || err.code === 'EEXIST') throw e;
    throw Object.assign(new Error(`cannot create the lock file ${file} of the runner work folder: ${err.message.replace(/, open '[^']*'$/, '')}`), { code: err.code });
  }
}
