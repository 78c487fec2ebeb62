import path from 'node:path';
import { lockPidFile, pidFileHolder, type PidLock } from '../core/pid-lock.js';

/** A held data-folder lock. `release()` is idempotent. */
export type FolderLock = PidLock;

/**
 * Takes the exclusive lock of a data folder: the file `<dir>/flotilla.lock` holding this
 * process's pid and start time, created with O_EXCL (core/pid-lock.ts). A lock left by a process
 * that is gone — dead, a zombie not yet reaped (`flotilla up` started again at once after
 * `kill -9`), or an earlier life of its pid — is taken over.
 * @throws core/pid-lock.ts LockInUseError "data folder DIR is in use by process N" when a live
 *   process holds it (including this process, through another open store).
 */
export function lockDataFolder(dir: string): FolderLock {
  const abs = path.resolve(dir);
  return lockPidFile(path.join(abs, 'flotilla.lock'), (pid, self) => inUseMessage(abs, pid, self));
}

const inUseMessage = (abs: string, pid: number, self: boolean) => `data folder ${abs} is in use by process ${pid}${self ? ' (this process)' : ''}`;

/**
 * {@link lockDataFolder}'s refusal, when a live process holds data folder `dir` now (the same
 * text), else null: read only, nothing taken (a command says so before its slow start).
 */
export function dataFolderInUse(dir: string): string | null {
  const abs = path.resolve(dir);
  const pid = pidFileHolder(path.join(abs, 'flotilla.lock'));
  return pid === null ? null : inUseMessage(abs, pid, pid === process.pid);
}
