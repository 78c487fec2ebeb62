import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { AgentDefinition } from '../../protocol/index.js';
import { codexArgs, codexConfig, codexHarness } from './codex.js';
import { CodexJsonParser } from './codex-stream.js';
import type { HarnessContext } from './types.js';

function ctx(over: Partial<HarnessContext> = {}, agent: Record<string, unknown> = {}): HarnessContext {
  return {
    jobId: 5,
    attempt: 1,
    agent: AgentDefinition.parse({ name: 'cx', harness: 'codex', model: 'gpt-5-codex', promptText: 'p', ...agent }),
    input: {},
    prompt: 'make out.txt',
    token: 'flj_codextoken',
    serverUrl: 'http://127.0.0.1:8787/',
    workspace: '/w',
    branch: 'flotilla/job-5',
    home: '/h',
    resumeSessionId: null,
    ...over,
  };
}

const line = (o: unknown) => ({ text: typeof o === 'string' ? o : JSON.stringify(o), truncated: false, droppedBytes: 0, invalidUtf8: false });

describe('codex harness', () => {
  it('writes a per-job CODEX_HOME config pointing at the gateway Responses endpoint, analytics and plugins off', async () => {
    const home = mkdtempSync(join(tmpdir(), 'codex-home-'));
    try {
      const c = ctx({ home, model: 'gpt-5', effort: 'max' });
      await codexHarness.prepare?.(c);
      const toml = readFileSync(join(home, '.codex', 'config.toml'), 'utf8');
      expect(toml).toBe(codexConfig(c));
      expect(toml).toContain('model_provider = "flotilla"\nmodel = "gpt-5"\nmodel_reasoning_effort = "xhigh"\n');
      expect(toml).toContain('base_url = "http://127.0.0.1:8787/v1"\nwire_api = "responses"\nenv_key = "OPENAI_API_KEY"');
      expect(toml).toContain('[analytics]\nenabled = false');
      expect(toml).toContain('[features]\nplugins = false');
      expect(toml).not.toContain('flj_');
      const cmd = codexHarness.command(c);
      expect(cmd.env).toMatchObject({ CODEX_HOME: join(home, '.codex'), OPENAI_API_KEY: 'flj_codextoken', HOME: home, FLOTILLA_JOB_TOKEN: 'flj_codextoken' });
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  });

  it('asks for the sandbox the agent needs and resumes a session', () => {
    expect(codexArgs(ctx())).toEqual(['exec', '--json', '--sandbox', 'workspace-write', '--skip-git-repo-check', '--', 'make out.txt']);
    expect(codexArgs(ctx({ resumeSessionId: 'th_1' }, { readOnly: true }))).toEqual(['exec', '--json', '--sandbox', 'read-only', '--skip-git-repo-check', 'resume', 'th_1', '--', 'make out.txt']);
  });

  it('turns codex exec --json events into the same job events as Claude Code', () => {
    const p = new CodexJsonParser({ pid: 42, workspace: '/w', branch: 'b' });
    const events = [
      { type: 'thread.started', thread_id: 'th_1' },
      { type: 'turn.started' },
      { type: 'item.started', item: { id: 'item_0', type: 'command_execution', command: 'bash -lc "echo hello > out.txt"', status: 'in_progress' } },
      { type: 'item.completed', item: { id: 'item_0', type: 'command_execution', command: 'bash -lc "echo hello > out.txt"', aggregated_output: '', exit_code: 0, status: 'completed' } },
      { type: 'item.completed', item: { id: 'item_1', type: 'agent_message', text: 'done' } },
      { type: 'turn.completed', usage: { input_tokens: 280, cached_input_tokens: 80, output_tokens: 35 } },
      'not json',
    ].flatMap((o) => p.stdout(line(o)));
    expect(events).toEqual([
      { type: 'harness.started', data: { harness: 'codex', pid: 42, sessionId: 'th_1', workspace: '/w', branch: 'b' } },
      { type: 'tool.call', data: { id: 'item_0', name: 'Bash', input: { command: 'bash -lc "echo hello > out.txt"' } } },
      { type: 'tool.result', data: { id: 'item_0', name: 'Bash', output: '', isError: false } },
      { type: 'message', data: { role: 'assistant', text: 'done' } },
      { type: 'usage', data: { inputTokens: 200, outputTokens: 35, cacheReadTokens: 80, cacheWriteTokens: 0 } },
      { type: 'log', data: { stream: 'stdout', line: 'not json' } },
    ]);
    expect(p.finish({ code: 0, signal: null })).toEqual({ status: 'succeeded', summary: 'done', sessionId: 'th_1' });
  });

  it('a budget refusal fails with reason budget; a missing binary fails at start', () => {
    const p = new CodexJsonParser({ pid: 1 });
    p.stdout(line({ type: 'turn.failed', error: { message: 'exceeded retry limit, last status: 429 Too Many Requests, insufficient_quota' } }));
    expect(p.finish({ code: 1, signal: null })).toMatchObject({ status: 'failed', reason: 'budget' });
    const q = new CodexJsonParser({ pid: 1 });
    const failed = q.finish({ code: null, signal: null, spawnError: new Error('spawn codex ENOENT') });
    expect(failed).toMatchObject({ status: 'failed', reason: 'harness_start' });
    expect(failed.error).toMatch(/npm install @openai\/codex@0\.171\.0/);
  });
});
