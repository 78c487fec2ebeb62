import { cp, mkdir, realpath, rm, stat } from 'node:fs/promises';
import { basename, isAbsolute, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { maskUrlPasswords } from '../protocol/index.js';
import { git } from './git.js';

/** A workspace could not be prepared. The job fails with reason `workspace` and this message. */
export class WorkspaceError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'WorkspaceError';
  }
}

/** What {@link prepareWorkspace} needs. */
export interface WorkspaceRequest {
  jobId: number;
  /** `input.repo`: a git URL (`https://…`, `ssh://…`, `git@host:path`, `file://…`) or a path; none → an empty repository. */
  repo?: string;
  /** `input.ref`: branch, tag or commit to start from; default the repository's HEAD. */
  ref?: string;
  /** Runner work folder: the workspace goes to `<workDir>/workspaces/job-<id>`. */
  workDir: string;
  /** Where a relative repo path resolves; every local repo (path or `file:` URL) must be inside it (after realpath). */
  repoBaseDir: string;
  /** Told what is happening ("cloning X"), for progress events. */
  onProgress?: (message: string) => void;
  signal?: AbortSignal;
}

/** A prepared workspace: a fresh clone on branch `flotilla/job-<id>` at `baseCommit`. */
export interface Workspace {
  dir: string;
  branch: string;
  /** The commit the branch started from (full sha). */
  baseCommit: string;
}

/** True when `repo` looks like a git URL rather than a local path. */
export function isGitUrl(repo: string): boolean {
  return /^[a-z][a-z0-9+.-]*:\/\//i.test(repo) || /^[\w.-]+@[\w.-]+:/.test(repo);
}

/**
 * Prepares `<workDir>/workspaces/job-<id>` (removed first if present, so a retry starts
 * clean). Without input.repo: an empty repository with one empty commit. Else clones input.repo — a URL, a directory with its own `.git`, or a plain directory
 * that is first snapshot into a fresh repository (without node_modules and .git) — checks
 * out `ref` if given, creates branch `flotilla/job-<id>` and sets the commit identity
 * (Flotilla <flotilla@localhost>) in the workspace's git config.
 * @throws WorkspaceError naming the repo or ref (no such path, clone failure, bad ref).
 * What it says (progress, errors: the job's transcript and error) shows a repo URL's password as
 * `***` (protocol/text.ts maskUrlPasswords); git is given the real URL.
 */
export async function prepareWorkspace(req: WorkspaceRequest): Promise<Workspace> {
  const say = req.onProgress;
  try {
    return await prepare({ ...req, onProgress: say && ((m) => say(maskUrlPasswords(m))) });
  } catch (err) {
    if (err instanceof WorkspaceError) throw new WorkspaceError(maskUrlPasswords(err.message));
    if (err instanceof Error) err.message = maskUrlPasswords(err.message);
    throw err;
  }
}

async function prepare(req: WorkspaceRequest): Promise<Workspace> {
  const dir = join(req.workDir, 'workspaces', `job-${req.jobId}`);
  const branch = `flotilla/job-${req.jobId}`;
  await rm(dir, { recursive: true, force: true });
  await mkdir(join(req.workDir, 'workspaces'), { recursive: true });
  if (req.repo === undefined || req.repo.trim() === '') return emptyWorkspace(req, dir, branch);

  let source = req.repo;
  let snapshot: string | null = null;
  try {
    const local = localRepoPath(req.repo);
    if (local !== null) {
      const path = await confinedRepoPath(req.repoBaseDir, local, req.repo);
      const st = await stat(path).catch(() => null);
      if (!st?.isDirectory()) throw new WorkspaceError(`repo ${req.repo}: no such directory (${path})`);
      if (await exists(join(path, '.git'))) {
        source = path;
      } else {
        req.onProgress?.(`snapshotting ${req.repo} into a fresh git repository`);
        snapshot = join(req.workDir, 'snapshots', `job-${req.jobId}`);
        await makeSnapshot(path, snapshot, req.repo, req.signal);
        source = snapshot;
      }
    }
    req.onProgress?.(`cloning ${req.repo}`);
    try {
      await git(req.workDir, ['clone', '--quiet', '--no-checkout', '--config', 'user.name=Flotilla', '--config', 'user.email=flotilla@localhost', '--', source, dir], {
        signal: req.signal,
      });
    } catch (err) {
      throw new WorkspaceError(`repo ${req.repo}: clone failed: ${(err as Error).message}`);
    }
  } finally {
    if (snapshot) await rm(snapshot, { recursive: true, force: true });
  }

  let base: string;
  if (req.ref !== undefined && req.ref !== '') {
    base = await resolveRef(dir, req.ref).catch(() => {
      throw new WorkspaceError(`repo ${req.repo}: ref ${req.ref} not found`);
    });
  } else {
    base = await git(dir, ['rev-parse', '--verify', 'HEAD^{commit}']).catch(() => {
      throw new WorkspaceError(`repo ${req.repo}: has no commits`);
    });
  }
  await git(dir, ['checkout', '--quiet', '-B', branch, base]);
  return { dir, branch, baseCommit: base };
}

/**
 * The local path a repo input names — a path, or a `file:` URL (a git URL too, but it reads
 * the runner's own disk) — or null for a remote git URL.
 * @throws WorkspaceError for a `file:` URL that is not a valid file URL.
 */
export function localRepoPath(repo: string): string | null {
  if (/^file:/i.test(repo)) {
    try {
      return fileURLToPath(repo);
    } catch (err) {
      throw new WorkspaceError(`repo ${repo}: not a valid file URL (${(err as Error).message})`);
    }
  }
  return isGitUrl(repo) ? null : repo;
}

/**
 * Resolves `path` (relative to `baseDir`) with every symlink followed (realpath) and refuses
 * it unless it is `baseDir` itself or inside it — `..`, absolute paths and symlinks pointing
 * out are all caught, because the check is on the real path of both sides.
 * Rule from issue 5 (security finding 1b): local repository paths in job input are confined
 * to the runner's `--repo-base`.
 * @returns the real path.
 * @throws WorkspaceError (the job fails with reason `workspace`) naming the repo and the base.
 */
export async function confinedRepoPath(baseDir: string, path: string, label: string): Promise<string> {
  const base = await realpath(baseDir).catch(() => {
    throw new WorkspaceError(`repo ${label}: the runner's repo base ${baseDir} does not exist`);
  });
  const real = await realpath(resolve(base, path)).catch(() => {
    throw new WorkspaceError(`repo ${label}: no such directory (${resolve(base, path)})`);
  });
  const rel = relative(base, real);
  if (rel === '' || (rel !== '..' && !rel.startsWith(`..${sep}`) && !isAbsolute(rel))) return real;
  throw new WorkspaceError(`repo ${label}: ${real} is outside the runner's repo base ${base} (local repositories must be inside it: --repo-base DIR or FLOTILLA_REPO_BASE of the runner, flotilla up or run --local; default the folder it was started in)`);
}

/** A job without a repo (input.repo absent) works in a fresh, empty repository. */
async function emptyWorkspace(req: WorkspaceRequest, dir: string, branch: string): Promise<Workspace> {
  if (req.ref) throw new WorkspaceError(`input.ref ${req.ref} given without input.repo`);
  req.onProgress?.('creating an empty git repository (no input.repo)');
  await mkdir(dir, { recursive: true });
  await git(dir, ['init', '--quiet'], { signal: req.signal });
  await git(dir, ['config', 'user.name', 'Flotilla']);
  await git(dir, ['config', 'user.email', 'flotilla@localhost']);
  await git(dir, ['checkout', '--quiet', '-b', branch]);
  await git(dir, ['commit', '--quiet', '--allow-empty', '--no-verify', '-m', `empty workspace for job ${req.jobId}`], { signal: req.signal });
  return { dir, branch, baseCommit: await git(dir, ['rev-parse', 'HEAD']) };
}

/** Resolves a branch (local or `origin/<ref>`), tag or commit to a full commit sha. */
async function resolveRef(dir: string, ref: string): Promise<string> {
  if (ref.startsWith('-')) throw new Error('bad ref');
  for (const candidate of [ref, `origin/${ref}`]) {
    try {
      return await git(dir, ['rev-parse', '--verify', '--quiet', `${candidate}^{commit}`]);
    } catch {
      // try the next form
    }
  }
  throw new Error('not found');
}

/** Copies `from` (minus node_modules and .git) to `to`, then `git init` + one commit. */
async function makeSnapshot(from: string, to: string, label: string, signal?: AbortSignal): Promise<void> {
  await rm(to, { recursive: true, force: true });
  await mkdir(to, { recursive: true });
  try {
    await cp(from, to, {
      recursive: true,
      filter: (src) => {
        const name = basename(src);
        return name !== 'node_modules' && name !== '.git';
      },
    });
  } catch (err) {
    throw new WorkspaceError(`repo ${label}: copying ${from} failed: ${(err as Error).message}`);
  }
  try {
    await git(to, ['init', '--quiet'], { signal });
    await git(to, ['add', '-A'], { signal });
    await git(to, ['commit', '--quiet', '--allow-empty', '--no-verify', '-m', `snapshot of ${label}`], { signal });
  } catch (err) {
    throw new WorkspaceError(`repo ${label}: snapshot failed: ${(err as Error).message}`);
  }
}

async function exists(path: string): Promise<boolean> {
  return stat(path).then(
    () => true,
    () => false,
  );
}

/**
 * What a job changed in its workspace since `baseCommit`.
 * @returns `commit` = HEAD when it moved from the base (else undefined), `branch` = the
 *   current branch, `changedFiles` = files differing from the base, committed or not,
 *   including untracked files (sorted, repo-relative).
 * @throws GitError when git cannot read the workspace.
 */
export async function collectChanges(dir: string, baseCommit: string): Promise<{ commit?: string; branch: string; changedFiles: string[] }> {
  const head = await git(dir, ['rev-parse', 'HEAD']);
  const branch = await git(dir, ['rev-parse', '--abbrev-ref', 'HEAD']);
  const diff = await git(dir, ['diff', '--name-only', '-z', baseCommit, '--']);
  const untracked = await git(dir, ['ls-files', '--others', '--exclude-standard', '-z']);
  const files = new Set([...diff.split('\0'), ...untracked.split('\0')].filter((f) => f !== ''));
  return { commit: head !== baseCommit ? head : undefined, branch, changedFiles: [...files].sort() };
}

/**
 * The workspace of an earlier job (or attempt) on this runner, as it was left — committed and
 * uncommitted changes included — for a job that resumes its session
 * (`<workDir>/workspaces/job-<fromJobId>`). `branch` is its current branch, `baseCommit` its
 * HEAD now (the resumed job's changes are counted from here).
 * @throws WorkspaceError when that workspace is not on this runner (removed, or another runner).
 */
export async function reuseWorkspace(workDir: string, fromJobId: number): Promise<Workspace> {
  const dir = join(workDir, 'workspaces', `job-${fromJobId}`);
  if (!(await exists(join(dir, '.git')))) throw new WorkspaceError(`the workspace of job ${fromJobId} is not on this runner (${dir})`);
  try {
    const branch = await git(dir, ['rev-parse', '--abbrev-ref', 'HEAD']);
    const baseCommit = await git(dir, ['rev-parse', 'HEAD']);
    return { dir, branch: branch === 'HEAD' ? `flotilla/job-${fromJobId}` : branch, baseCommit };
  } catch (err) {
    throw new WorkspaceError(`the workspace of job ${fromJobId} cannot be read: ${(err as Error).message}`);
  }
}
