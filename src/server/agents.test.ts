import { afterEach, describe, expect, it } from 'vitest';
import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AgentRegistry } from './agents.js';
import { SHIPPED_AGENTS } from './test-helpers.js';

const dirs: string[] = [];
afterEach(async () => {
  for (const d of dirs.splice(0)) await rm(d, { recursive: true, force: true });
});

async function agentsDir(files: Record<string, string>): Promise<string> {
  const root = await mkdtemp(join(tmpdir(), 'flotilla-agents-'));
  dirs.push(root);
  for (const [path, text] of Object.entries(files)) {
    await mkdir(join(root, path, '..'), { recursive: true });
    await writeFile(join(root, path), text);
  }
  return root;
}

describe('AgentRegistry', () => {
  it('loads the shipped test-fixer with defaults, prompt text and script', async () => {
    const reg = await AgentRegistry.load([SHIPPED_AGENTS]);
    const a = reg.get('test-fixer')!;
    expect(a).toMatchObject({ harness: 'claude-code', limits: { maxTurns: 30, timeoutSeconds: 900, defaultBudgetUsd: 2 }, runnerLabels: {} });
    expect(a.promptText.length).toBeGreaterThan(20);
    expect(reg.scriptFileFor('test-fixer')).toBe(join(SHIPPED_AGENTS, 'test-fixer', 'script.yaml'));
    expect(reg.get('nope')).toBeUndefined();
  });

  it('validates input, naming each field', async () => {
    const reg = await AgentRegistry.load([SHIPPED_AGENTS]);
    expect(reg.validateInput('test-fixer', { repo: 'examples/calc' })).toEqual([]);
    expect(reg.validateInput('test-fixer', { repo: 1, ref: 2 })).toEqual([
      { field: 'input.repo', message: 'must be string' },
      { field: 'input.ref', message: 'must be string' },
    ]);
    expect(reg.validateInput('test-fixer', {})).toEqual([{ field: 'input.repo', message: 'is required' }]);
    expect(() => reg.validateInput('nope', {})).toThrow(/unknown agent "nope"/);
  });

  it('loads a folder that is itself an agent, defaults the optional fields, and has no script', async () => {
    const root = await agentsDir({ 'agent.yaml': 'name: solo\nharness: command\ncommand: [echo]\n', 'prompt.md': 'hi' });
    const reg = await AgentRegistry.load([root]);
    expect(reg.list().map((a) => a.name)).toEqual(['solo']);
    expect(reg.get('solo')).toMatchObject({ version: '1', model: 'claude-sonnet-4-5', inputSchema: { type: 'object' }, promptText: 'hi' });
    expect(reg.scriptFileFor('solo')).toBeNull();
  });

  it('a later folder overrides an agent of the same name', async () => {
    const a = await agentsDir({ 'x/agent.yaml': 'name: x\nversion: "1"\nharness: codex\n', 'x/prompt.md': 'one' });
    const b = await agentsDir({ 'y/agent.yaml': 'name: x\nversion: "2"\nharness: codex\n', 'y/prompt.md': 'two' });
    const reg = await AgentRegistry.load([a, b]);
    expect(reg.get('x')).toMatchObject({ version: '2', promptText: 'two' });
  });

  const bad: Array<[string, Record<string, string>, RegExp]> = [
    ['bad YAML', { 'a/agent.yaml': 'name: [unclosed\n', 'a/prompt.md': '' }, /a\/agent\.yaml: not valid YAML/],
    ['unknown harness', { 'a/agent.yaml': 'name: a\nharness: gpt\n', 'a/prompt.md': '' }, /a\/agent\.yaml: harness: /],
    ['bad limit', { 'a/agent.yaml': 'name: a\nharness: codex\nlimits: { maxTurns: -1 }\n', 'a/prompt.md': '' }, /a\/agent\.yaml: limits\.maxTurns: /],
    ['unknown field', { 'a/agent.yaml': 'name: a\nharness: codex\ncolour: red\n', 'a/prompt.md': '' }, /a\/agent\.yaml: .*colour/],
    ['missing prompt file', { 'a/agent.yaml': 'name: a\nharness: codex\n' }, /a\/agent\.yaml: prompt: file .*prompt\.md cannot be read/],
    ['bad input schema', { 'a/agent.yaml': 'name: a\nharness: codex\ninputSchema: { type: 12 }\n', 'a/prompt.md': '' }, /a\/agent\.yaml: inputSchema: /],
    ['an option-like model (one argument of the harness command line)', { 'a/agent.yaml': 'name: a\nharness: claude-code\nmodel: --dangerously-skip-permissions\n', 'a/prompt.md': '' }, /a\/agent\.yaml: model: must be 1-200 characters of letters, digits, \. _ : @ \/ \+ - \[ \], starting with a letter or digit/],
    ['command harness without command', { 'a/agent.yaml': 'name: a\nharness: command\n', 'a/prompt.md': '' }, /a\/agent\.yaml: command: required/],
  ];
  for (const [name, files, message] of bad) {
    it(`fails clearly on ${name}`, async () => {
      const root = await agentsDir(files);
      await expect(AgentRegistry.load([root])).rejects.toThrow(message);
    });
  }

  // Same confinement as `agents install`: files resolve (symlinks followed) inside the agents folder.
  const SECRET = 'folder-secret-9931';
  const escapes: Array<[string, (root: string, secret: string) => Promise<void>, RegExp]> = [
    ['a ../ escape', async (root) => writeFile(join(root, 'a', 'agent.yaml'), 'name: a\nharness: codex\nprompt: ../../outside/secret.txt\n'), /a\/agent\.yaml: prompt: "\.\.\/\.\.\/outside\/secret\.txt" points outside the agent repository/],
    ['an absolute prompt', async (root, secret) => writeFile(join(root, 'a', 'agent.yaml'), `name: a\nharness: codex\nprompt: ${secret}\n`), /a\/agent\.yaml: prompt: ".*secret\.txt" is an absolute path/],
    ['a symlinked prompt', async (root, secret) => {
      await writeFile(join(root, 'a', 'agent.yaml'), 'name: a\nharness: codex\n');
      await symlink(secret, join(root, 'a', 'prompt.md'));
    }, /a\/agent\.yaml: prompt: "prompt\.md" is a symlink to a file outside/],
    ['a symlinked script.yaml', async (root, secret) => {
      await writeFile(join(root, 'a', 'agent.yaml'), 'name: a\nharness: codex\n');
      await writeFile(join(root, 'a', 'prompt.md'), 'hi');
      await symlink(secret, join(root, 'a', 'script.yaml'));
    }, /a\/script\.yaml: is a symlink to a file outside/],
  ];
  for (const [name, setup, message] of escapes) {
    it(`refuses ${name} out of the agents folder`, async () => {
      const base = await agentsDir({ 'outside/secret.txt': SECRET, 'agents/a/.keep': '' });
      await setup(join(base, 'agents'), join(base, 'outside', 'secret.txt'));
      const err = (await AgentRegistry.load([join(base, 'agents')]).catch((e: unknown) => e)) as Error;
      expect(err.message).toMatch(message);
      expect(err.message).not.toContain(SECRET);
    });
  }

  it('allows a prompt shared by two agents inside the agents folder, and reports folder agents that an install would shadow', async () => {
    const root = await agentsDir({ 'shared.md': 'common', 'a/agent.yaml': 'name: a\nharness: codex\nprompt: ../shared.md\n' });
    await symlink('../shared.md', join(root, 'a', 'prompt.md'));
    const reg = await AgentRegistry.load([root]);
    expect(reg.get('a')?.promptText).toBe('common');
    expect([reg.wouldShadowFolderAgent('a'), reg.wouldShadowFolderAgent('b')]).toEqual([true, false]);
  });

  it('fails on a missing agents folder', async () => {
    await expect(AgentRegistry.load(['/nonexistent/agents'])).rejects.toThrow(/\/nonexistent\/agents cannot be read/);
  });
});
