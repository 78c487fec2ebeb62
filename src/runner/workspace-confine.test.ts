import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { prepareWorkspace, WorkspaceError } from './workspace.js';

// Security finding 1b (issue 5): a job's local repo path must stay under the runner's --repo-base.
let tmp: string;
let base: string;
let work: string;
let outside: string;

beforeEach(() => {
  tmp = mkdtempSync(join(tmpdir(), 'flotilla-confine-'));
  base = join(tmp, 'base');
  work = join(tmp, 'work');
  outside = join(tmp, 'outside');
  mkdirSync(join(base, 'proj'), { recursive: true });
  writeFileSync(join(base, 'proj', 'a.txt'), 'inside\n');
  mkdirSync(outside, { recursive: true });
  writeFileSync(join(outside, 'secret.txt'), 'outside\n');
});
afterEach(() => rmSync(tmp, { recursive: true, force: true }));

const prep = (jobId: number, repo: string) => prepareWorkspace({ jobId, repo, workDir: work, repoBaseDir: base });

async function refused(p: Promise<unknown>): Promise<WorkspaceError> {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(WorkspaceError);
  return err as WorkspaceError;
}

describe('local repo paths are confined to the repo base', () => {
  it('takes a directory inside the base (relative, and absolute inside)', async () => {
    const ws = await prep(1, 'proj');
    expect(readFileSync(join(ws.dir, 'a.txt'), 'utf8')).toBe('inside\n');
    const abs = await prep(2, join(base, 'proj'));
    expect(readFileSync(join(abs.dir, 'a.txt'), 'utf8')).toBe('inside\n');
  });

  it('refuses .. out of the base', async () => {
    const e = await refused(prep(3, '../outside'));
    expect(e.message).toBe(`repo ../outside: ${outside} is outside the runner's repo base ${base} (local repositories must be inside it: --repo-base DIR or FLOTILLA_REPO_BASE of the runner, flotilla up or run --local; default the folder it was started in)`);
    await refused(prep(4, 'proj/../../outside'));
  });

  it('refuses an absolute path outside the base (/etc)', async () => {
    const e = await refused(prep(5, '/etc'));
    expect(e.message).toContain("repo /etc: /etc is outside the runner's repo base");
  });

  it('refuses a symlink inside the base that points out', async () => {
    symlinkSync(outside, join(base, 'link'));
    const e = await refused(prep(6, 'link'));
    expect(e.message).toContain(`repo link: ${outside} is outside`);
  });

  it('refuses a file: URL outside the base, takes one inside', async () => {
    const e = await refused(prep(7, `file://${outside}`));
    expect(e.message).toContain('is outside');
    const ws = await prep(8, `file://${join(base, 'proj')}`);
    expect(readFileSync(join(ws.dir, 'a.txt'), 'utf8')).toBe('inside\n');
  });

  it('a symlink inside the base pointing inside is fine; a missing path says so', async () => {
    symlinkSync(join(base, 'proj'), join(base, 'alias'));
    const ws = await prep(9, 'alias');
    expect(readFileSync(join(ws.dir, 'a.txt'), 'utf8')).toBe('inside\n');
    const e = await refused(prep(10, 'nope'));
    expect(e.message).toBe(`repo nope: no such directory (${join(base, 'nope')})`);
  });
});
