/**
 * `--repo-base DIR` (FLOTILLA_REPO_BASE) on `flotilla run --local` and `flotilla up`, as on
 * `flotilla runner`: a local repository outside the folder the command started in is refused
 * naming the option that admits it (it named `--repo-base`, which `run` did not take: fresh-tester
 * finding), and taken with it. The built CLI as a process; a command agent, no model calls.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runFlotilla, tempDir } from './helpers.js';

const dir = tempDir('flotilla-repo-base-');
afterAll(() => dir.cleanup());

const agents = join(dir.path, 'agents');
mkdirSync(join(agents, 'lister'), { recursive: true });
writeFileSync(
  join(agents, 'lister', 'agent.yaml'),
  [
    'name: lister',
    'version: "1"',
    'harness: command',
    `command: [sh, -c, 'cat > /dev/null; test -f README && echo "{\\"type\\":\\"message\\",\\"data\\":{\\"role\\":\\"assistant\\",\\"text\\":\\"found it\\"}}"']`,
    'model: claude-sonnet-4-5',
    'prompt: prompt.md',
    'limits: { maxTurns: 1, timeoutSeconds: 60, defaultBudgetUsd: 1 }',
    'inputSchema: { type: object, properties: { repo: { type: string } } }',
    '',
  ].join('\n'),
);
writeFileSync(join(agents, 'lister', 'prompt.md'), 'List it.\n');
const repo = join(dir.path, 'repo');
mkdirSync(repo);
writeFileSync(join(repo, 'README'), 'hello\n');
const run = (...extra: string[]) => runFlotilla(['run', '--local', 'lister', JSON.stringify({ repo }), '--agents', agents, ...extra], { FLOTILLA_LOG_LEVEL: 'error' });

describe('run --local --repo-base', () => {
  it('a repository outside the current folder is refused naming --repo-base / FLOTILLA_REPO_BASE; with it, the job runs in a checkout of it', async () => {
    const outside = await run('--data', join(dir.path, 'd1'));
    expect(outside.code).toBe(1);
    expect(outside.out + outside.err).toContain(`is outside the runner's repo base ${process.cwd()} (local repositories must be inside it: --repo-base DIR or FLOTILLA_REPO_BASE of the runner, flotilla up or run --local; default the folder it was started in)`);
    const inside = await run('--data', join(dir.path, 'd2'), '--repo-base', dir.path);
    expect([inside.code, inside.err], inside.out).toEqual([0, '']);
    expect(inside.out).toContain('found it');
    const viaEnv = await runFlotilla(['run', '--local', 'lister', JSON.stringify({ repo }), '--agents', agents, '--data', join(dir.path, 'd3')], { FLOTILLA_LOG_LEVEL: 'error', FLOTILLA_REPO_BASE: dir.path });
    expect(viaEnv.code, viaEnv.out + viaEnv.err).toBe(0);
  }, 90_000);

  it('a --repo-base that is not a folder: exit 2 naming it', async () => {
    const bad = await run('--data', join(dir.path, 'd4'), '--repo-base', join(dir.path, 'nope'));
    expect([bad.code, bad.err]).toEqual([2, `flotilla: --repo-base (FLOTILLA_REPO_BASE): ${join(dir.path, 'nope')} is not a folder\n`]);
  });
});
