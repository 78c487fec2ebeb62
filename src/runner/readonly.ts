import { execFile } from 'node:child_process';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { HarnessCommand } from './harness/types.js';

/** Name of the file the write probe tries to create in the workspace. */
const PROBE = '.flotilla-write-probe';

/**
 * The `unshare` prefix that gives the harness a private mount namespace (as root: a plain
 * mount namespace; otherwise also a user namespace mapping the runner's user to root inside).
 */
function unsharePrefix(): string[] {
  const root = process.getuid?.() === 0;
  return root ? ['--mount', '--propagation', 'private'] : ['--user', '--map-root-user', '--mount', '--propagation', 'private'];
}

/**
 * `sh -c` script: bind-mount `$0` read-only onto itself, enter it again (the cwd inherited from
 * before the mount still points at the writable mount), then exec the rest of the arguments.
 */
const MOUNT_RO = 'mount --bind -o ro "$0" "$0" || { echo "flotilla: cannot mount the workspace read-only" >&2; exit 90; }; cd "$0" || exit 90; exec "$@"';

/**
 * Wraps `cmd` so that it runs with `dir` (the workspace) mounted read-only, for it and every
 * process it starts, while the rest of the file system (its HOME, /tmp) stays writable:
 * `unshare --mount ... sh -c 'mount --bind -o ro DIR DIR && exec CMD...'`. The process id
 * stays the same (unshare and sh exec), so process-group handling is unchanged.
 * Source of the rule: issue 4, "a read-only mode where the agent's tools cannot write to the
 * workspace (verify by trying)" — see {@link verifyReadOnly}.
 */
export function readOnlyCommand(cmd: HarnessCommand, dir: string): HarnessCommand {
  return { ...cmd, file: 'unshare', args: [...unsharePrefix(), '--', '/bin/sh', '-c', MOUNT_RO, dir, cmd.file, ...cmd.args] };
}

/**
 * Verifies read-only mode by trying: runs a probe under the same wrapper that tries to create
 * a file in `dir`. Resolves when the write was refused.
 * @throws Error with an actionable message when the wrapper cannot run here (no `unshare`, no
 *   permission to create mount namespaces) or when the write went through.
 */
export async function verifyReadOnly(dir: string, env: Record<string, string>): Promise<void> {
  const script = `if echo probe > ${PROBE} 2>/dev/null; then exit 91; fi; exit 0`;
  const probe = readOnlyCommand({ file: '/bin/sh', args: ['-c', script], env, cwd: dir }, dir);
  const result = await new Promise<{ code: number | null; stderr: string; error?: Error }>((resolve) => {
    execFile(probe.file, probe.args, { cwd: dir, env, timeout: 10_000 }, (err, _out, stderr) => {
      const code = err ? (typeof (err as NodeJS.ErrnoException & { code?: unknown }).code === 'number' ? ((err as unknown as { code: number }).code) : null) : 0;
      resolve({ code, stderr: String(stderr), ...(err && code === null ? { error: err } : {}) });
    });
  });
  await rm(join(dir, PROBE), { force: true });
  if (result.code === 0) return;
  if (result.code === 91) throw new Error('read-only mode is not enforced here: a test write to the workspace went through (is the workspace on a file system that ignores read-only bind mounts?)');
  const why = result.error ? result.error.message : result.stderr.trim().split('\n').slice(-2).join(' ') || `exit code ${result.code}`;
  throw new Error(`read-only mode needs a private mount namespace (util-linux unshare, and permission to create mount namespaces), which failed here: ${why}`);
}
