import { existsSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { AgentDefinition } from '../../protocol/index.js';
import { claudeArgs, defaultClaudePath, harnessEnv } from './claude-code.js';
import type { HarnessContext } from './types.js';

function ctx(over: Partial<HarnessContext> = {}, agent: Record<string, unknown> = {}): HarnessContext {
  return {
    jobId: 3,
    attempt: 1,
    agent: AgentDefinition.parse({ name: 'a', harness: 'claude-code', promptText: 'p', ...agent }),
    input: {},
    prompt: '-starts with a dash',
    token: 'flj_secretjobtoken',
    serverUrl: 'http://127.0.0.1:8787/',
    workspace: '/w',
    branch: 'flotilla/job-3',
    home: '/h',
    resumeSessionId: null,
    ...over,
  };
}

describe('claude-code command', () => {
  it('builds the argument list; no --tools when allowedTools is empty; --resume when resuming', () => {
    expect(claudeArgs(ctx())).toEqual([
      '-p', '--output-format', 'stream-json', '--verbose', '--model', 'claude-sonnet-4-5', '--max-turns', '50', '--dangerously-skip-permissions', '--mcp-config', '/h/flotilla-mcp.json', '--strict-mcp-config', '--', '-starts with a dash',
    ]);
    expect(claudeArgs(ctx({ resumeSessionId: 'abc' }, { allowedTools: ['Bash', 'Edit'], model: 'haiku', limits: { maxTurns: 3 } }))).toEqual([
      '-p', '--output-format', 'stream-json', '--verbose', '--model', 'haiku', '--max-turns', '3', '--dangerously-skip-permissions', '--tools', 'Bash,Edit', '--resume', 'abc', '--strict-mcp-config', '--', '-starts with a dash',
    ]);
  });

  it('gives the Flotilla tools to an agent that lists its tools only when it names one of them', () => {
    const args = claudeArgs(ctx({}, { allowedTools: ['Read', 'mcp__flotilla__start_job'] }));
    expect(args.slice(args.indexOf('--tools'), args.indexOf('--'))).toEqual(['--tools', 'Read,mcp__flotilla__start_job', '--mcp-config', '/h/flotilla-mcp.json', '--strict-mcp-config']);
  });

  it('passes the effort tier as --model and --effort', () => {
    expect(claudeArgs(ctx({ model: 'claude-opus-4-6', effort: 'max' }))).toEqual([
      '-p', '--output-format', 'stream-json', '--verbose', '--model', 'claude-opus-4-6', '--effort', 'max', '--max-turns', '50', '--dangerously-skip-permissions', '--mcp-config', '/h/flotilla-mcp.json', '--strict-mcp-config', '--', '-starts with a dash',
    ]);
  });

  it('builds the environment from scratch: nothing secret of the runner leaks', () => {
    const env = harnessEnv(ctx(), { PATH: '/bin', LANG: 'C.UTF-8', ANTHROPIC_API_KEY: 'sk-ant-real', AWS_SECRET_ACCESS_KEY: 'x', FLOTILLA_TOKEN: 'fla_admin', HOME: '/root' });
    expect(env).toEqual({
      PATH: '/bin',
      LANG: 'C.UTF-8',
      HOME: '/h',
      ANTHROPIC_BASE_URL: 'http://127.0.0.1:8787',
      ANTHROPIC_API_KEY: 'flj_secretjobtoken',
      FLOTILLA_URL: 'http://127.0.0.1:8787',
      FLOTILLA_JOB_TOKEN: 'flj_secretjobtoken',
      FLOTILLA_JOB_ID: '3',
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
      MCP_TOOL_TIMEOUT: '3700000',
      MCP_CONNECT_TIMEOUT_MS: '60000',
      ...(process.getuid?.() === 0 ? { IS_SANDBOX: '1' } : {}),
    });
  });

  it('finds the installed claude binary', () => {
    const p = defaultClaudePath();
    expect(p).toMatch(/@anthropic-ai\/claude-code\/bin\/claude(\.exe)?$/);
    expect(existsSync(p)).toBe(true);
  });
});
