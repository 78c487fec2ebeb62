import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestServer } from './test-helpers.js';

/**
 * `POST /api/agents/install` with a source URL holding a password: its error messages show the
 * password as `***` (`https://bot:***@host/...`). Git reaches a local repository through that URL
 * (`url.<path>.insteadOf`, given to the server's git in GIT_CONFIG_* variables), so the clone
 * works and the install fails later, at a ref the repository does not have.
 */
describe('agents install errors never show a source URL password', () => {
  const dir = mkdtempSync(join(tmpdir(), 'flotilla-install-mask-'));
  const url = 'https://bot:s3cr3t-t0ken@git.example.invalid/agents.git';
  const saved = { ...process.env };
  let t: TestServer;
  beforeAll(async () => {
    const repo = join(dir, 'agents');
    execFileSync('git', ['init', '--quiet', repo]);
    writeFileSync(join(repo, 'agent.yaml'), 'name: masked\nharness: command\ncommand: [echo, hi]\nprompt: p.md\n');
    writeFileSync(join(repo, 'p.md'), 'hi');
    execFileSync('git', ['-C', repo, 'add', '.']);
    execFileSync('git', ['-C', repo, '-c', 'user.name=t', '-c', 'user.email=t@t', 'commit', '--quiet', '-m', 'agents']);
    // Read when the installer's module loads: set before the server is imported.
    Object.assign(process.env, { GIT_CONFIG_COUNT: '1', GIT_CONFIG_KEY_0: `url.${repo}.insteadOf`, GIT_CONFIG_VALUE_0: url });
    const { startTestServer } = await import('./test-helpers.js');
    t = await startTestServer();
  });
  afterAll(async () => {
    await t.close();
    process.env = saved;
    rmSync(dir, { recursive: true, force: true });
  });

  it('a ref the repository does not have: 422 fetch_failed naming the ref and the masked URL', async () => {
    const res = await t.api('/api/agents/install', { json: { source: url, ref: 'no-such-branch' } });
    expect(res.status).toBe(422);
    const body = (await res.json()) as { error: { code: string; message: string } };
    expect(body.error).toEqual({ code: 'fetch_failed', message: 'agent repository refused as a whole: ref: no-such-branch is not a branch, tag or commit of https://bot:***@git.example.invalid/agents.git' });
    expect(JSON.stringify(body)).not.toContain('s3cr3t');
    // The URL works: without the bad ref the agent installs, its source recorded without credentials.
    const ok = await t.api('/api/agents/install', { json: { source: url } });
    expect(ok.status).toBe(201);
    expect(((await ok.json()) as { installed: Array<{ name: string; source: string }> }).installed.map((a) => [a.name, a.source])).toEqual([['masked', 'https://***@git.example.invalid/agents.git']]);
  });
});
