import { mkdir, stat } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';

/**
 * A folder that could not be made: `path` the folder (absolute), `code` the OS error code
 * (`ENOENT`, `EACCES`, `ENOTDIR`, ...). The message names both.
 */
export class MakeDirError extends Error {
  constructor(
    readonly path: string,
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = 'MakeDirError';
  }
}

/**
 * `mkdir -p`: makes `path` and the folders above it that are missing, each with `mode`; fine
 * when it is a folder already. Node's own `mkdir(path, { recursive: true })` (20.x) spins for
 * ever at full CPU — never returning, not even to a signal handler — where a parent exists but
 * takes no new folder (`/proc/nope`: mkdir says ENOENT, the parent says EEXIST, again and
 * again). Here each folder is tried at most twice (before and after its parent), so that
 * fails at once.
 * @throws MakeDirError naming the folder and the OS error, e.g. `cannot create folder
 *   /proc/nope: ENOENT: no such file or directory (its parent /proc exists, but takes no new
 *   folder)`, or `... /etc/passwd/x: ENOTDIR ...`, `... EACCES ...`.
 */
export async function makeDir(path: string, mode = 0o777): Promise<void> {
  const dir = resolve(path);
  const first = await tryMkdir(dir, mode);
  if (first === null) return;
  const parent = dirname(dir);
  if (first.code !== 'ENOENT' || first.there || parent === dir) throw failure(dir, first);
  await makeDir(parent, mode);
  const second = await tryMkdir(dir, mode);
  if (second === null) return;
  // The parent is a folder now, yet this one still cannot be made: retrying cannot help.
  throw failure(dir, second, second.code === 'ENOENT' && !second.there ? ` (its parent ${parent} exists, but takes no new folder)` : '');
}

/** A failed mkdir; `there`: something is at the path already (not a folder, or a link to nothing). */
type Failed = NodeJS.ErrnoException & { there?: boolean };

/** null when `dir` is a folder now (made, or there already); else the error. */
async function tryMkdir(dir: string, mode: number): Promise<Failed | null> {
  try {
    await mkdir(dir, { mode });
    return null;
  } catch (e) {
    const err = e as NodeJS.ErrnoException;
    if (err.code !== 'EEXIST') return err;
    const st = await stat(dir).catch((s: NodeJS.ErrnoException) => s);
    if (st instanceof Error) return Object.assign(st, { there: true }); // a symbolic link to nothing (ENOENT), a loop (ELOOP)
    if (st.isDirectory()) return null;
    return Object.assign(new Error(`${dir} exists and is not a folder`), { code: 'ENOTDIR', there: true });
  }
}

function failure(dir: string, err: Failed, hint = ''): MakeDirError {
  const code = err.code ?? 'EUNKNOWN';
  // Node's message is `ENOENT: no such file or directory, mkdir '/proc/nope'`: the path is said once, first.
  let text = err.message.replace(/, (mkdir|stat) '[^']*'$/, '');
  if (err.there && err.syscall === 'stat') text += ` (${dir} is a symbolic link to a missing or looping target)`;
  return new MakeDirError(dir, code, `cannot create folder ${dir}: ${text.startsWith(code) ? text : `${code}: ${text}`}${hint}`);
}
