import { execFile } from 'node:child_process';

/** A failed git command: `message` includes git's stderr (last lines). */
export class GitError extends Error {
  constructor(
    message: string,
    readonly stderr: string,
  ) {
    super(message);
    this.name = 'GitError';
  }
}

/** Environment for git: no prompts for credentials, no pager, fixed identity for commits we make. */
const GIT_ENV: Record<string, string> = {
  GIT_TERMINAL_PROMPT: '0',
  GIT_PAGER: 'cat',
  GIT_AUTHOR_NAME: 'Flotilla',
  GIT_AUTHOR_EMAIL: 'flotilla@localhost',
  GIT_COMMITTER_NAME: 'Flotilla',
  GIT_COMMITTER_EMAIL: 'flotilla@localhost',
};

/**
 * Runs `git args...` in `cwd` with execFile (never a shell) and returns stdout, trimmed of its
 * final newline.
 * @param opts.timeoutMs kill git after this long (default 10 min).
 * @param opts.signal abort (e.g. the job was cancelled).
 * @throws GitError naming the command and git's stderr when git fails or times out.
 */
export function git(cwd: string, args: string[], opts: { timeoutMs?: number; signal?: AbortSignal } = {}): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(
      'git',
      args,
      {
        cwd,
        env: { ...process.env, ...GIT_ENV },
        timeout: opts.timeoutMs ?? 600_000,
        maxBuffer: 64 * 1024 * 1024,
        signal: opts.signal,
      },
      (err, stdout, stderr) => {
        if (err) {
          const tail = String(stderr).trim().split('\n').slice(-5).join('\n');
          reject(new GitError(`git ${args[0] ?? ''} failed: ${tail || err.message}`, String(stderr)));
          return;
        }
        resolve(String(stdout).replace(/\n$/, ''));
      },
    );
  });
}
