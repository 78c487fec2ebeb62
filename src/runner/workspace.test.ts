import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { collectChanges, isGitUrl, prepareWorkspace, WorkspaceError } from './workspace.js';

const CHECKOUT = fileURLToPath(new URL('../..', import.meta.url));
let tmp: string;
const g = (cwd: string, ...args: string[]) =>
  execFileSync('git', args, {
    cwd,
    encoding: 'utf8',
    env: { ...process.env, GIT_AUTHOR_NAME: 't', GIT_AUTHOR_EMAIL: 't@t', GIT_COMMITTER_NAME: 't', GIT_COMMITTER_EMAIL: 't@t' },
  }).trim();

beforeEach(() => {
  tmp = mkdtempSync(join(tmpdir(), 'flotilla-ws-'));
});
afterEach(() => rmSync(tmp, { recursive: true, force: true }));

describe('prepareWorkspace', () => {
  it('snapshots a directory without its own .git (examples/calc) into a fresh repo and clones it', async () => {
    const progress: string[] = [];
    const ws = await prepareWorkspace({ jobId: 7, repo: 'examples/calc', workDir: tmp, repoBaseDir: CHECKOUT, onProgress: (m) => progress.push(m) });
    expect(ws.dir).toBe(join(tmp, 'workspaces', 'job-7'));
    expect(ws.branch).toBe('flotilla/job-7');
    expect(progress).toEqual(['snapshotting examples/calc into a fresh git repository', 'cloning examples/calc']);
    expect(g(ws.dir, 'log', '--format=%s')).toBe('snapshot of examples/calc');
    expect(g(ws.dir, 'rev-parse', 'HEAD')).toBe(ws.baseCommit);
    expect(g(ws.dir, 'rev-parse', '--abbrev-ref', 'HEAD')).toBe('flotilla/job-7');
    expect(g(ws.dir, 'config', 'user.name')).toBe('Flotilla');
    expect(g(ws.dir, 'config', 'user.email')).toBe('flotilla@localhost');
    expect(readFileSync(join(ws.dir, 'src', 'calc.js'), 'utf8')).toBe(readFileSync(join(CHECKOUT, 'examples', 'calc', 'src', 'calc.js'), 'utf8'));
    // The snapshot is its own repository, not the Flotilla checkout, and tracks exactly the example's files.
    expect(g(ws.dir, 'ls-files').split('\n').sort()).toEqual(['README.md', 'package.json', 'src/calc.js', 'test/calc.test.js']);
    expect(existsSync(join(tmp, 'snapshots', 'job-7'))).toBe(false);
  });

  it('leaves node_modules and .git of a plain directory out of the snapshot', async () => {
    const src = join(tmp, 'plain');
    mkdirSync(join(src, 'node_modules', 'x'), { recursive: true });
    mkdirSync(join(src, 'lib'), { recursive: true });
    writeFileSync(join(src, 'node_modules', 'x', 'i.js'), '');
    writeFileSync(join(src, 'lib', 'a.js'), 'a');
    const ws = await prepareWorkspace({ jobId: 1, repo: src, workDir: join(tmp, 'w'), repoBaseDir: '/' });
    expect(g(ws.dir, 'ls-files')).toBe('lib/a.js');
    expect(existsSync(join(ws.dir, 'node_modules'))).toBe(false);
  });

  it('clones a git repository at a branch, a tag or a commit', async () => {
    const src = join(tmp, 'src');
    mkdirSync(src);
    g(src, 'init', '-q', '-b', 'main');
    writeFileSync(join(src, 'f.txt'), 'one\n');
    g(src, 'add', '.');
    g(src, 'commit', '-q', '-m', 'one');
    const c1 = g(src, 'rev-parse', 'HEAD');
    g(src, 'tag', 'v1');
    g(src, 'checkout', '-q', '-b', 'feature');
    writeFileSync(join(src, 'f.txt'), 'feature\n');
    g(src, 'commit', '-q', '-am', 'feature');
    const c3 = g(src, 'rev-parse', 'HEAD');
    g(src, 'checkout', '-q', 'main');
    writeFileSync(join(src, 'f.txt'), 'two\n');
    g(src, 'commit', '-q', '-am', 'two');
    const c2 = g(src, 'rev-parse', 'HEAD');
    const work = join(tmp, 'work');

    const head = await prepareWorkspace({ jobId: 1, repo: 'src', workDir: work, repoBaseDir: tmp });
    expect([head.baseCommit, readFileSync(join(head.dir, 'f.txt'), 'utf8')]).toEqual([c2, 'two\n']);
    const feature = await prepareWorkspace({ jobId: 2, repo: 'src', ref: 'feature', workDir: work, repoBaseDir: tmp });
    expect([feature.baseCommit, readFileSync(join(feature.dir, 'f.txt'), 'utf8')]).toEqual([c3, 'feature\n']);
    expect(g(feature.dir, 'rev-parse', '--abbrev-ref', 'HEAD')).toBe('flotilla/job-2');
    const tag = await prepareWorkspace({ jobId: 3, repo: src, ref: 'v1', workDir: work, repoBaseDir: '/' });
    expect([tag.baseCommit, readFileSync(join(tag.dir, 'f.txt'), 'utf8')]).toEqual([c1, 'one\n']);
    const sha = await prepareWorkspace({ jobId: 4, repo: `file://${src}`, ref: c3.slice(0, 10), workDir: work, repoBaseDir: '/' });
    expect(sha.baseCommit).toBe(c3);
  });

  it('gives a job without input.repo a fresh empty repository on its branch', async () => {
    const ws = await prepareWorkspace({ jobId: 9, workDir: tmp, repoBaseDir: '/' });
    expect(ws).toEqual({ dir: join(tmp, 'workspaces', 'job-9'), branch: 'flotilla/job-9', baseCommit: g(ws.dir, 'rev-parse', 'HEAD') });
    expect(g(ws.dir, 'rev-parse', '--abbrev-ref', 'HEAD')).toBe('flotilla/job-9');
    expect(g(ws.dir, 'ls-files')).toBe('');
    expect(g(ws.dir, 'config', 'user.email')).toBe('flotilla@localhost');
    await expect(prepareWorkspace({ jobId: 10, ref: 'main', workDir: tmp, repoBaseDir: '/' })).rejects.toThrow('input.ref main given without input.repo');
  });

  it('starts clean when the workspace already exists (a retried attempt)', async () => {
    const first = await prepareWorkspace({ jobId: 5, repo: 'examples/calc', workDir: tmp, repoBaseDir: CHECKOUT });
    writeFileSync(join(first.dir, 'leftover.txt'), 'x');
    const second = await prepareWorkspace({ jobId: 5, repo: 'examples/calc', workDir: tmp, repoBaseDir: CHECKOUT });
    expect(existsSync(join(second.dir, 'leftover.txt'))).toBe(false);
  });

  it('names the repo or ref when it cannot prepare the workspace', async () => {
    const work = join(tmp, 'work');
    await expect(prepareWorkspace({ jobId: 1, repo: 'nope', workDir: work, repoBaseDir: tmp })).rejects.toThrow(
      new WorkspaceError(`repo nope: no such directory (${join(tmp, 'nope')})`),
    );
    await expect(prepareWorkspace({ jobId: 2, repo: 'examples/calc', ref: 'no-such-branch', workDir: work, repoBaseDir: CHECKOUT })).rejects.toThrow(
      'repo examples/calc: ref no-such-branch not found',
    );
    await expect(prepareWorkspace({ jobId: 3, repo: `file://${tmp}/missing.git`, workDir: work, repoBaseDir: tmp })).rejects.toThrow(
      `repo file://${tmp}/missing.git: no such directory (${tmp}/missing.git)`,
    );
  });
});

describe('collectChanges', () => {
  it('reports the new HEAD and files changed vs the base, committed, uncommitted and untracked', async () => {
    const ws = await prepareWorkspace({ jobId: 1, repo: 'examples/calc', workDir: tmp, repoBaseDir: CHECKOUT });
    expect(await collectChanges(ws.dir, ws.baseCommit)).toEqual({ branch: 'flotilla/job-1', changedFiles: [], commit: undefined });
    writeFileSync(join(ws.dir, 'src', 'calc.js'), '// changed\n');
    g(ws.dir, 'commit', '-q', '-am', 'fix');
    writeFileSync(join(ws.dir, 'README.md'), 'edited, not committed\n');
    writeFileSync(join(ws.dir, 'new file.txt'), 'untracked\n');
    const c = await collectChanges(ws.dir, ws.baseCommit);
    expect(c).toEqual({ branch: 'flotilla/job-1', commit: g(ws.dir, 'rev-parse', 'HEAD'), changedFiles: ['README.md', 'new file.txt', 'src/calc.js'] });
    expect(c.commit).not.toBe(ws.baseCommit);
  });
});

describe('isGitUrl', () => {
  it('tells URLs from paths', () => {
    expect(['https://github.com/a/b.git', 'ssh://git@h/x', 'git@github.com:a/b.git', 'file:///tmp/x'].map(isGitUrl)).toEqual([true, true, true, true]);
    expect(['examples/calc', '/abs/path', './rel', 'C:thing/x'].map(isGitUrl)).toEqual([false, false, false, false]);
  });
});
