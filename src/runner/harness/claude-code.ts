import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { ClaudeStreamParser } from './claude-stream.js';
import type { Harness, HarnessCommand, HarnessContext, HarnessParser } from './types.js';
import { MCP_CONNECT_TIMEOUT_MS, MCP_TOOL_TIMEOUT_SECONDS, claudeMcpConfigPath, wantsFlotillaTools, writeClaudeMcpConfig } from './mcp-config.js';

/** Variables of the runner's environment a harness may see (none of them is a secret). */
const PASSED_THROUGH = ['PATH', 'LANG', 'LC_ALL', 'LC_CTYPE', 'TZ', 'TMPDIR', 'USER', 'LOGNAME', 'SHELL'];

/**
 * The `claude` binary of the installed `@anthropic-ai/claude-code` package.
 * @throws Error when the package is not installed.
 */
export function defaultClaudePath(): string {
  const require = createRequire(import.meta.url);
  let pkgFile: string;
  try {
    pkgFile = require.resolve('@anthropic-ai/claude-code/package.json');
  } catch {
    throw new Error('@anthropic-ai/claude-code is not installed: install it, or give the runner the path of the claude binary (claudePath)');
  }
  const pkg = JSON.parse(readFileSync(pkgFile, 'utf8')) as { bin?: string | Record<string, string> };
  const bin = typeof pkg.bin === 'string' ? pkg.bin : (pkg.bin?.claude ?? 'bin/claude.exe');
  return join(dirname(pkgFile), bin);
}

/**
 * The environment of a harness process, built from scratch: PATH and a few harmless locale
 * variables of the runner, HOME = the job's own home, the gateway as model endpoint with the
 * job token as API key, FLOTILLA_URL / FLOTILLA_JOB_TOKEN / FLOTILLA_JOB_ID, non-essential
 * traffic off, and IS_SANDBOX=1 when running as root (Claude Code refuses to skip permissions
 * as root otherwise). Nothing else of the runner's environment (no inherited
 * ANTHROPIC_API_KEY, no runner credential).
 */
export function harnessEnv(ctx: HarnessContext, base: NodeJS.ProcessEnv = process.env): Record<string, string> {
  const env: Record<string, string> = {};
  for (const k of PASSED_THROUGH) {
    const v = base[k];
    if (v !== undefined) env[k] = v;
  }
  env.PATH ??= '/usr/local/bin:/usr/bin:/bin';
  const url = ctx.serverUrl.replace(/\/+$/, '');
  Object.assign(env, {
    HOME: ctx.home,
    ANTHROPIC_BASE_URL: url,
    ANTHROPIC_API_KEY: ctx.token,
    FLOTILLA_URL: url,
    FLOTILLA_JOB_TOKEN: ctx.token,
    FLOTILLA_JOB_ID: String(ctx.jobId),
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
    // wait_jobs (flotilla mcp) may wait up to an hour for children (issue 6).
    MCP_TOOL_TIMEOUT: String(MCP_TOOL_TIMEOUT_SECONDS * 1000),
    // How long Claude Code waits for an alwaysLoad MCP server (flotilla mcp) before its first
    // turn; its default, 5 s, is not enough for a Node process on a loaded machine.
    MCP_CONNECT_TIMEOUT_MS: String(MCP_CONNECT_TIMEOUT_MS),
  });
  if (process.getuid?.() === 0) env.IS_SANDBOX = '1';
  return env;
}

/**
 * The command line: `claude -p --output-format stream-json --verbose --model M [--effort L] --max-turns N
 * --dangerously-skip-permissions [--tools T1,T2] [--resume S] [--mcp-config <home>/flotilla-mcp.json]
 * --strict-mcp-config -- PROMPT` (the MCP config: the job-tree tools, harness/mcp-config.ts, given
 * unless `allowedTools` lists tools without them: wantsFlotillaTools).
 * `--tools` (not `--allowedTools`, which only pre-approves) is what limits the tools the model
 * is offered in 2.1.197 (verified: the request's `tools` list and `system/init.tools` hold
 * exactly these); an empty `allowedTools` leaves Claude Code's default set. The prompt goes
 * after `--` because `--tools` is variadic and a prompt may start with `-`. M and L come from
 * the effort tier when the job has one (ctx.model / ctx.effort), else M is agent.model.
 */
export function claudeArgs(ctx: HarnessContext): string[] {
  const a = ctx.agent;
  const args = ['-p', '--output-format', 'stream-json', '--verbose', '--model', ctx.model ?? a.model];
  if (ctx.effort) args.push('--effort', ctx.effort);
  args.push('--max-turns', String(a.limits.maxTurns), '--dangerously-skip-permissions');
  if (a.allowedTools.length > 0) args.push('--tools', a.allowedTools.join(','));
  if (ctx.resumeSessionId) args.push('--resume', ctx.resumeSessionId);
  // The job-tree tools (issue 6): `flotilla mcp`, configured in the job's home by prepare(),
  // unless the agent lists its tools without them; strict either way (no other MCP config).
  if (wantsFlotillaTools(a.allowedTools)) args.push('--mcp-config', claudeMcpConfigPath(ctx));
  args.push('--strict-mcp-config');
  args.push('--', ctx.prompt);
  return args;
}

/** The `claude-code` harness: Claude Code's CLI in print mode with stream-json output. */
export const claudeCodeHarness: Harness = {
  name: 'claude-code',
  async prepare(ctx: HarnessContext): Promise<void> {
    await writeClaudeMcpConfig(ctx);
  },
  command(ctx: HarnessContext): HarnessCommand {
    return { file: ctx.executable ?? defaultClaudePath(), args: claudeArgs(ctx), env: harnessEnv(ctx), cwd: ctx.workspace };
  },
  parser(ctx: HarnessContext, pid: number): HarnessParser {
    return new ClaudeStreamParser({ pid, workspace: ctx.workspace, branch: ctx.branch });
  },
};
