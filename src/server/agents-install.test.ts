import { describe, it, expect } from 'vitest';
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
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
      writeFileSync(join(dir, 'solo', 'agent.yaml'), 'name: solo\nharness: command\ncommand: ["./run.sh"]\nprompt: p.md\n');
      writeFileSync(join(dir, 'solo', 'p.md'), 'hi');
      const r = await readAgentRepository(join(dir, 'solo'), null);
      expect(r.from).toMatchObject({ source: join(dir, 'solo'), ref: null });
      // `./run.sh` stays relative: the temp folder it was read from is not where it runs.
      expect(r.agents.map((a) => [a.name, a.definition.command, a.definition.promptText, a.script])).toEqual([['solo', ['./run.sh'], 'hi', null]]);
      await expect(readAgentRepository(dir, '--upload-pack=x')).rejects.toThrow(/^ref: "--upload-pack=x" is not a valid git ref/);
      await expect(readAgentRepository('-oops', 'main')).rejects.toThrow(/source/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
