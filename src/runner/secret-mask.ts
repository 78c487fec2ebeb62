import { execFile } from 'node:child_process';
import { accessSync, constants, statSync } from 'node:fs';
import type { HarnessCommand } from './harness/types.js';

/**
 * Hiding the runner's secrets (its credential) from the jobs it runs.
 *
 * Issue 5, security finding 1c: the harness runs as the runner's user (root here), so file
 * permissions cannot keep it from `<work>/credential.json`. The choice made: the credential
 * lives in its own folder `<work>/secret/` (mode 0700), and every harness starts in a private
 * mount namespace where an empty, read-only tmpfs covers that folder, then loses the
 * capabilities that could undo it:
 * - `unshare --mount` (as non-root also `--user --map-root-user`) gives the harness its own
 *   mount table; `mount -t tmpfs -o ro,mode=000` over `<work>/secret` hides the folder's
 *   contents from it and from everything it starts;
 * - `setpriv` then drops CAP_SYS_ADMIN (no umount / mount), CAP_SYS_PTRACE,
 *   CAP_DAC_READ_SEARCH (open_by_handle_at) and the raw-disk ones (see DROPPED) from the
 *   bounding and inheritable sets before exec: the harness, even as root, cannot remove the
 *   tmpfs, and — having fewer capabilities than the runner — the kernel refuses it the
 *   runner's `/proc/<pid>/root`, `/mem` and `/environ` (ptrace access check), so neither the
 *   file (through the runner's mount view) nor the credential in the runner's memory can be
 *   reached. A new user namespace does not help it either: mounts inherited into a less
 *   privileged namespace are locked together.
 * The process id stays the same (unshare, sh and setpriv exec), so process-group handling,
 * the run marker and the parent-death signal are unchanged.
 */

/**
 * Capabilities the harness loses: mounting/unmounting (sys_admin), the runner's /proc entries
 * (sys_ptrace), opening files by handle past the cover (dac_read_search, the "shocker" way
 * round mounts), raw disks and device nodes (sys_rawio, mknod), kernel modules, BPF and perf.
 */
const DROPPED = '-sys_admin,-sys_ptrace,-dac_read_search,-sys_rawio,-mknod,-sys_module,-bpf,-perfmon';

/**
 * `sh -c` script: `$0` = folder to hide, `$1` = how many extra paths follow, then those paths,
 * then the command. Mount an empty read-only tmpfs over the folder and over each extra folder,
 * bind /dev/null over each extra file (reads are empty, writes go nowhere; it cannot be
 * unmounted or renamed away without CAP_SYS_ADMIN), skip an extra path that does not exist,
 * then exec the command with the capabilities in DROPPED gone.
 */
const HIDE =
  'mount -t tmpfs -o ro,mode=000,size=4k flotilla-hidden "$0" || { echo "flotilla: cannot hide the runner credential folder" >&2; exit 92; }; ' +
  'n=$1; shift; while [ "$n" -gt 0 ]; do p=$1; shift; n=$((n - 1)); ' +
  'if [ -d "$p" ]; then mount -t tmpfs -o ro,mode=000,size=4k flotilla-hidden "$p" || { echo "flotilla: cannot hide $p" >&2; exit 92; }; ' +
  'elif [ -e "$p" ]; then mount --bind /dev/null "$p" || { echo "flotilla: cannot hide $p" >&2; exit 92; }; fi; done; ' +
  `exec setpriv --bounding-set ${DROPPED} --inh-caps ${DROPPED} -- "$@"`;

/** The `unshare` arguments: as root a plain mount namespace; otherwise also a user namespace mapping the runner's user to root inside. */
function unsharePrefix(): string[] {
  const root = process.getuid?.() === 0;
  return root ? ['--mount', '--propagation', 'private'] : ['--user', '--map-root-user', '--mount', '--propagation', 'private'];
}

/**
 * Wraps `cmd` so that it (and everything it starts) cannot read `secretDir`, nor any of
 * `extraPaths` (absolute; folders covered like `secretDir`, files by /dev/null; one missing
 * when the harness starts is skipped): see the module comment. Apply it before
 * {@link readOnlyCommand} (which must wrap the result: it needs its mount capability, which
 * this wrapper drops).
 */
export function hideSecretsCommand(cmd: HarnessCommand, secretDir: string, extraPaths: readonly string[] = []): HarnessCommand {
  // An executable that is not there starts nothing to hide from; left alone, its spawn error stays ENOENT (reason harness_start).
  if (!findExecutable(cmd.file, cmd.env)) return cmd;
  return { ...cmd, file: 'unshare', args: [...unsharePrefix(), '--', '/bin/sh', '-c', HIDE, secretDir, String(extraPaths.length), ...extraPaths, cmd.file, ...cmd.args] };
}

/** True when `file` (a path, or a name looked up on env.PATH) is an executable regular file. */
function findExecutable(file: string, env: Record<string, string>): boolean {
  const candidates = file.includes('/') ? [file] : (env.PATH ?? '').split(':').filter((d) => d !== '').map((d) => `${d}/${file}`);
  return candidates.some((p) => {
    try {
      accessSync(p, constants.X_OK);
      return statSync(p).isFile();
    } catch {
      return false;
    }
  });
}

/**
 * Checks by trying that hiding works here: runs `test -r <file>` under the wrapper and
 * expects it to fail while the runner itself can read the file.
 * @returns null when it works, else why not (no `unshare`/`setpriv`, no permission to create
 *   mount namespaces, or the file still readable).
 */
export async function probeHiding(secretDir: string, file: string): Promise<string | null> {
  const probe = hideSecretsCommand({ file: '/bin/sh', args: ['-c', 'if cat "$0" >/dev/null 2>&1; then exit 91; fi; exit 0', file], env: {}, cwd: '/' }, secretDir);
  return new Promise((resolve) => {
    execFile(probe.file, probe.args, { cwd: '/', env: { PATH: process.env.PATH ?? '/usr/bin:/bin' }, timeout: 10_000 }, (err, _out, stderr) => {
      if (!err) return resolve(null);
      const code = (err as { code?: unknown }).code;
      if (code === 91) return resolve(`the credential was still readable under the wrapper`);
      resolve(String(stderr).trim().split('\n').slice(-2).join(' ') || err.message);
    });
  });
}
