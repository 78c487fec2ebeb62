import fs from 'node:fs';
import path from 'node:path';

/** Lock files this process holds (absolute paths), so a lock naming our own pid is told apart from a stale one. */
const held = new Set<string>();

/** A held data-folder lock. `release()` is idempotent. */
export interface FolderLock {
  readonly file: string;
  release(): void;
}

/** True when a process with this pid exists (EPERM: it exists but is not ours). */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Takes the exclusive lock of a data folder: the file `<dir>/flotilla.lock` holding this
 * process's pid, created with O_EXCL. A lock left by a dead process (or by an earlier life of
 * this very pid, e.g. a restarted container) is taken over.
 * @throws Error "data folder DIR is in use by process N" when a live process holds it
 *   (including this process, through another open store).
 */
export function lockDataFolder(dir: string): FolderLock {
  const file = path.resolve(dir, 'flotilla.lock');
  for (let tries = 0; ; tries++) {
    try {
      const fd = fs.openSync(file, 'wx', 0o600);
      try {
        fs.writeSync(fd, `${process.pid}\n`);
      } finally {
        fs.closeSync(fd);
      }
      held.add(file);
      return {
        file,
        release() {
          if (!held.delete(file)) return;
          try {
            if (readPid(file) === process.pid) fs.unlinkSync(file);
          } catch {
            // already gone
          }
        },
      };
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST' || tries >= 5) throw e;
    }
    const pid = readPid(file);
    if (pid !== null && (pid === process.pid ? held.has(file) : alive(pid))) {
      throw new Error(`data folder ${path.resolve(dir)} is in use by process ${pid}${pid === process.pid ? ' (this process)' : ''}`);
    }
    // Stale (dead pid, unreadable, or half-written): take it over.
    try {
      fs.unlinkSync(file);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
    }
  }
}

function readPid(file: string): number | null {
  try {
    const n = Number.parseInt(fs.readFileSync(file, 'utf8').trim(), 10);
    return Number.isSafeInteger(n) && n > 0 ? n : null;
  } catch {
    return null;
  }
}
