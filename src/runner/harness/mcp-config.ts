import { mkdir, writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import type { HarnessContext } from './types.js';

/** Name of the MCP server the runner gives every MCP-speaking harness; Claude Code calls its tools `mcp__flotilla__<tool>`. */
export const MCP_SERVER_NAME = 'flotilla';

/** The Flotilla MCP tools as Claude Code names them. */
export const FLOTILLA_MCP_TOOLS = ['start_job', 'wait_jobs', 'job_status', 'cancel_job'].map((t) => `mcp__${MCP_SERVER_NAME}__${t}`);

/**
 * How to start `flotilla mcp` (src/cli/commands/mcp.ts) on this machine: this Node binary and
 * the package's `bin/flotilla.js` (found relative to this module, in src/ and dist/ alike).
 */
export function flotillaMcpCommand(): { command: string; args: string[] } {
  const bin = fileURLToPath(new URL('../../../bin/flotilla.js', import.meta.url));
  return { command: process.execPath, args: [bin, 'mcp'] };
}

/**
 * Whether a job gets the Flotilla tools: an agent whose `allowedTools` is empty (the harness's
 * default set) does; an agent that lists its tools gets them only when it names one of
 * {@link FLOTILLA_MCP_TOOLS}, so a restricted agent (e.g. read-only tools) cannot start jobs.
 */
export function wantsFlotillaTools(allowedTools: readonly string[]): boolean {
  return allowedTools.length === 0 || allowedTools.some((t) => FLOTILLA_MCP_TOOLS.includes(t));
}

/** The variables `flotilla mcp` reads (control plane URL, the job's token, its id); every harness's environment has them (harnessEnv). */
export const MCP_ENV_VARS = ['FLOTILLA_URL', 'FLOTILLA_JOB_TOKEN', 'FLOTILLA_JOB_ID'];

/**
 * How long a harness waits for one Flotilla tool call, seconds: `wait_jobs` may wait up to an
 * hour (its own cap), longer than the harnesses' defaults (Codex: 60 s). Given to Claude Code
 * as MCP_TOOL_TIMEOUT (ms, in harnessEnv) and to Codex as `tool_timeout_sec`.
 */
export const MCP_TOOL_TIMEOUT_SECONDS = 3700;

/**
 * How long a harness waits for `flotilla mcp` to be up before its first turn, ms (Claude Code:
 * MCP_CONNECT_TIMEOUT_MS, read for `alwaysLoad` servers).
 */
export const MCP_CONNECT_TIMEOUT_MS = 60_000;

/** Path of Claude Code's MCP config for the job: `<home>/flotilla-mcp.json`. */
export function claudeMcpConfigPath(ctx: HarnessContext): string {
  return join(ctx.home, 'flotilla-mcp.json');
}

/**
 * Claude Code's `--mcp-config` document (`{"mcpServers":{"flotilla":{type:"stdio",...}}}`).
 * It names no secret: Claude Code starts MCP servers with its own environment, which holds
 * FLOTILLA_URL / FLOTILLA_JOB_TOKEN / FLOTILLA_JOB_ID (claude-code.ts harnessEnv).
 */
export function claudeMcpConfig(): string {
  const { command, args } = flotillaMcpCommand();
  // alwaysLoad: Claude Code connects such a server before the first turn; without it, `-p` runs
  // connect MCP servers in the background and a turn taken before `flotilla mcp` is up (a
  // loaded machine: 2 s was enough) finds no job-tree tools ("No such tool available").
  return JSON.stringify({ mcpServers: { [MCP_SERVER_NAME]: { type: 'stdio', command, args, alwaysLoad: true } } }, null, 2) + '\n';
}

/** Writes {@link claudeMcpConfig} into the job's home (mode 0600). */
export async function writeClaudeMcpConfig(ctx: HarnessContext): Promise<string> {
  const file = claudeMcpConfigPath(ctx);
  await mkdir(ctx.home, { recursive: true });
  await writeFile(file, claudeMcpConfig(), { mode: 0o600 });
  return file;
}

/**
 * The `[mcp_servers.flotilla]` table of a job's Codex config.toml. Codex starts MCP servers
 * with a reduced environment; `env_vars` passes FLOTILLA_URL / FLOTILLA_JOB_TOKEN /
 * FLOTILLA_JOB_ID through from Codex's own (harnessEnv), so no secret is written to disk.
 */
export function codexMcpToml(): string {
  const { command, args } = flotillaMcpCommand();
  return [
    `[mcp_servers.${MCP_SERVER_NAME}]`,
    `command = ${JSON.stringify(command)}`,
    `args = ${JSON.stringify(args)}`,
    `env_vars = ${JSON.stringify(MCP_ENV_VARS)}`,
    `startup_timeout_sec = ${MCP_CONNECT_TIMEOUT_MS / 1000}`,
    `tool_timeout_sec = ${MCP_TOOL_TIMEOUT_SECONDS}`,
    '',
  ].join('\n');
}
