import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { prepareWorkspace, WorkspaceError } from './workspace.js';

/**
 * A repo URL with a password in a job's input: what the runner says about the workspace (its
 * progress lines and the job's `workspace` error) shows the password as `***`; git gets the real
 * URL. A local repository answers for `https://ada:s3cret-pw@git.example.invalid/team/api.git`
 * through `url.<path>.insteadOf` (GIT_CONFIG_* variables, which the runner's git inherits).
 */
describe('workspace messages mask a repo URL password', () => {
  const tmp = mkdtempSync(join(tmpdir(), 'flotilla-ws-mask-'));
  const url = 'https://ada:s3cret-pw@git.example.invalid/team/api.git';
  const saved = { ...process.env };
  beforeAll(() => {
    const repo = join(tmp, 'origin');
    execFileSync('git', ['init', '--quiet', repo]);
    writeFileSync(join(repo, 'README'), 'hi\n');
    execFileSync('git', ['-C', repo, 'add', '.']);
    execFileSync('git', ['-C', repo, '-c', 'user.name=t', '-c', 'user.email=t@t', 'commit', '--quiet', '-m', 'first']);
    Object.assign(process.env, { GIT_CONFIG_COUNT: '1', GIT_CONFIG_KEY_0: `url.${repo}.insteadOf`, GIT_CONFIG_VALUE_0: url });
  });
  afterAll(() => {
    process.env = saved;
    rmSync(tmp, { recursive: true, force: true });
  });

  const prepare = async (jobId: number, repo: string, ref?: string) => {
    const progress: string[] = [];
    const result = await prepareWorkspace({ jobId, repo, ref, workDir: join(tmp, 'work'), repoBaseDir: tmp, onProgress: (m) => progress.push(m) }).catch((e: unknown) => e);
    return { result, progress };
  };

  it('the clone uses the real URL; the progress line shows it masked', async () => {
    const { result, progress } = await prepare(1, url);
    expect(result).not.toBeInstanceOf(Error);
    const dir = (result as { dir: string }).dir;
    expect(execFileSync('git', ['-C', dir, 'config', 'remote.origin.url'], { encoding: 'utf8' }).trim()).toBe(url);
    expect(progress).toEqual(['cloning https://ada:***@git.example.invalid/team/api.git']);
  });

  it('a ref it does not have: the workspace error names the masked URL', async () => {
    const { result, progress } = await prepare(2, url, 'no-such-ref');
    expect(result).toBeInstanceOf(WorkspaceError);
    expect((result as Error).message).toBe('repo https://ada:***@git.example.invalid/team/api.git: ref no-such-ref not found');
    expect(progress.join('\n')).not.toContain('s3cret');
  });

  it('a clone that fails: neither the message nor git\'s own text in it holds the password', async () => {
    const bad = 'https://ada:s3cret-pw@127.0.0.1:9/team/gone.git';
    const { result } = await prepare(3, bad);
    expect(result).toBeInstanceOf(WorkspaceError);
    const message = (result as Error).message;
    expect(message).toMatch(/^repo https:\/\/ada:\*\*\*@127\.0\.0\.1:9\/team\/gone\.git: clone failed: git clone failed: /);
    expect(message).not.toContain('s3cret');
  });
});
