import { describe, it, expect } from 'vitest';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, mkdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { AgentInstallError, readAgentRepository, withoutCredentials } from './agents-install.js';

describe('readAgentRepository', () => {
  it('never puts credentials of a git URL in its error', async () => {
    const err = (await readAgentRepository('https://bot:s3cr3t-t0ken@127.0.0.1:9/agents.git', null).catch((e: unknown) => e)) as Error;
    expect(err).toBeInstanceOf(AgentInstallError);
    expect(err.message).toMatch(/^git clone failed: /);
    expect(err.message).not.toContain('s3cr3t-t0ken');
    expect(withoutCredentials('https://bot:s3cr3t@git.example/a.git')).toBe('https://***@git.example/a.git');
    expect(withoutCredentials('ssh://git@host/a.git')).toBe('ssh://***@host/a.git');
    expect(withoutCredentials('https://git.example/a.git')).toBe('https://git.example/a.git');
  });

  it('reads a plain folder with one agent at the top, and refuses bad refs and empty folders', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'flotilla-ai-'));
    try {
      await expect(readAgentRepository(dir, null)).rejects.toThrow(/no agent found/);
      mkdirSync(join(dir, 'solo'));
      writeFileSync(join(dir, 'solo', 'agent.yaml'), 'name: solo\nharness: command\ncommand: ["run-solo", "--fast"]\nprompt: p.md\n');
      writeFileSync(join(dir, 'solo', 'p.md'), 'hi');
      const r = await readAgentRepository(join(dir, 'solo'), null);
      expect(r.from).toMatchObject({ source: join(dir, 'solo'), ref: null });
      expect(r.agents.map((a) => [a.name, a.definition.command, a.definition.promptText, a.script])).toEqual([['solo', ['run-solo', '--fast'], 'hi', null]]);
      // A file of the agent's folder (`./run.sh`) is not installed with it: refused, naming the argument.
      for (const [arg, at] of [['["./run.sh"]', 0], ['[sh, ../tools/run.sh]', 1]] as const) {
        writeFileSync(join(dir, 'solo', 'agent.yaml'), `name: solo\nharness: command\ncommand: ${arg}\nprompt: p.md\n`);
        const err = (await readAgentRepository(join(dir, 'solo'), null).catch((e: unknown) => e)) as Error;
        expect(err).toBeInstanceOf(AgentInstallError);
        expect(err.message).toMatch(new RegExp(`^agent\\.yaml: command\\[${at}\\]: \\.{1,2}/(tools/)?run\\.sh is a file of the agent's folder`));
      }
      await expect(readAgentRepository(dir, '--upload-pack=x')).rejects.toThrow(/^ref: "--upload-pack=x" is not a valid git ref/);
      await expect(readAgentRepository('-oops', 'main')).rejects.toThrow(/source/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

/**
 * Confinement (fresh-user security finding): every file the installer reads must resolve,
 * symlinks followed, inside the repository. Each escape kind is tried on a plain folder and on
 * a git repository (git keeps symlinks); the secret's content must never come back.
 */
describe('readAgentRepository confines every file to the repository', () => {
  const SECRET = 'top-secret-admin-token-4711';
  const gitIn = (cwd: string, ...args: string[]) =>
    execFileSync('git', args, { cwd, env: { ...process.env, GIT_AUTHOR_NAME: 't', GIT_AUTHOR_EMAIL: 't@e', GIT_COMMITTER_NAME: 't', GIT_COMMITTER_EMAIL: 't@e' } });

  /** `setup(repo, secretFile)` writes the repository; `message` is what the refusal must say. */
  const kinds: Array<[string, (repo: string, secret: string) => void, RegExp]> = [
    ['prompt: ../.. escape', (repo, secret) => agent(repo, `prompt: ${relative(join(repo, 'a'), secret)}`), /^a\/agent\.yaml: prompt: ".*secret\.txt" points outside the agent repository$/],
    ['prompt: absolute path', (repo, secret) => agent(repo, `prompt: ${secret}`), /^a\/agent\.yaml: prompt: ".*secret\.txt" is an absolute path/],
    ['prompt file symlinked outside', (repo, secret) => {
      agent(repo, 'prompt: p.md');
      symlinkSync(secret, join(repo, 'a', 'p.md'));
    }, /^a\/agent\.yaml: prompt: "p\.md" is a symlink to a file outside the agent repository$/],
    ['prompt through a symlinked folder', (repo, secret) => {
      agent(repo, 'prompt: up/secret.txt');
      symlinkSync(join(secret, '..'), join(repo, 'a', 'up'));
    }, /^a\/agent\.yaml: prompt: "up\/secret\.txt" is a symlink to a file outside/],
    ['script.yaml symlinked outside', (repo, secret) => {
      agent(repo, 'prompt: p.md');
      writeFileSync(join(repo, 'a', 'p.md'), 'hi');
      symlinkSync(secret, join(repo, 'a', 'script.yaml'));
    }, /^a\/script\.yaml: is a symlink to a file outside the agent repository$/],
    ['agent.yaml symlinked outside', (repo, secret) => {
      writeFileSync(join(secret, '..', 'agent.yaml'), 'name: a\nharness: codex\nprompt: secret.txt\n');
      mkdirSync(join(repo, 'a'));
      symlinkSync(join(secret, '..', 'agent.yaml'), join(repo, 'a', 'agent.yaml'));
    }, /^a\/agent\.yaml: is a symlink to a file outside the agent repository$/],
    ['agents/ folder symlinked outside', (repo, secret) => {
      const outside = join(secret, '..', 'agents');
      mkdirSync(join(outside, 'a'), { recursive: true });
      writeFileSync(join(outside, 'a', 'agent.yaml'), 'name: a\nharness: codex\nprompt: p.md\n');
      writeFileSync(join(outside, 'a', 'p.md'), SECRET);
      symlinkSync(outside, join(repo, 'agents'));
    }, /^agents\/a\/agent\.yaml: is a symlink to a file outside the agent repository$/],
  ];

  function agent(repo: string, promptLine: string): void {
    mkdirSync(join(repo, 'a'), { recursive: true });
    writeFileSync(join(repo, 'a', 'agent.yaml'), `name: a\nharness: codex\n${promptLine}\n`);
  }

  for (const asGit of [false, true]) {
    for (const [kind, setup, message] of kinds) {
      it(`refuses ${kind} (${asGit ? 'git repository' : 'plain folder'})`, async () => {
        const dir = mkdtempSync(join(tmpdir(), 'flotilla-esc-'));
        try {
          const secret = join(dir, 'outside', 'secret.txt');
          mkdirSync(join(dir, 'outside'));
          writeFileSync(secret, SECRET);
          const repo = join(dir, 'repo');
          mkdirSync(repo);
          setup(repo, secret);
          if (asGit) {
            gitIn(repo, 'init', '-q', '-b', 'main');
            gitIn(repo, 'add', '-A');
            gitIn(repo, 'commit', '-qm', 'x');
          }
          const err = (await readAgentRepository(repo, null).catch((e: unknown) => e)) as Error;
          expect(err).toBeInstanceOf(AgentInstallError);
          expect(err.message).toMatch(message);
          expect(err.message).not.toContain(SECRET);
        } finally {
          rmSync(dir, { recursive: true, force: true });
        }
      });
    }
  }

  it('accepts a symlink that stays inside the repository, and ../ to a shared file inside it', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'flotilla-esc-'));
    try {
      mkdirSync(join(dir, 'shared'));
      writeFileSync(join(dir, 'shared', 'common.md'), 'shared prompt');
      agent(dir, 'prompt: p.md');
      symlinkSync('../shared/common.md', join(dir, 'a', 'p.md'));
      mkdirSync(join(dir, 'b'));
      writeFileSync(join(dir, 'b', 'agent.yaml'), 'name: b\nharness: codex\nprompt: ../shared/common.md\n');
      const r = await readAgentRepository(dir, null);
      expect(r.agents.map((a) => [a.name, a.definition.promptText])).toEqual([
        ['a', 'shared prompt'],
        ['b', 'shared prompt'],
      ]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
