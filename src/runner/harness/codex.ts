import { readFileSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { harnessEnv } from './claude-code.js';
import { CodexJsonParser } from './codex-stream.js';
import type { Harness, HarnessCommand, HarnessContext, HarnessParser } from './types.js';
import { codexMcpToml, wantsFlotillaTools } from './mcp-config.js';

/** The `codex` launcher of the installed `@openai/codex` package, or `codex` (looked up on PATH) when it is not installed. */
export function defaultCodexPath(): string {
  try {
    const pkgFile = createRequire(import.meta.url).resolve('@openai/codex/package.json');
    const pkg = JSON.parse(readFileSync(pkgFile, 'utf8')) as { bin?: string | Record<string, string> };
    const bin = typeof pkg.bin === 'string' ? pkg.bin : pkg.bin?.codex;
    return bin ? join(dirname(pkgFile), bin) : 'codex';
  } catch {
    return 'codex';
  }
}

/** The job's CODEX_HOME (inside its own HOME, so a resumed job finds its sessions again). */
export function codexHome(ctx: HarnessContext): string {
  return join(ctx.home, '.codex');
}

/** Codex's `model_reasoning_effort` for a tier level (Codex has no `max`: it becomes `xhigh`). */
export function codexEffort(level: string): string {
  return level === 'max' ? 'xhigh' : level;
}

/**
 * `$CODEX_HOME/config.toml` for one job (harness-facts.md): the gateway's Responses endpoint as
 * the only model provider, the job token read from `OPENAI_API_KEY`, no retries (the gateway
 * answers budget refusals so that a retry is useless), analytics and plugins off (otherwise it
 * dials out, and a `git ls-remote` it starts can outlive it). For an agent that may write, the
 * workspace's `.git` is a writable root of Codex's `workspace-write` sandbox
 * (`sandbox_workspace_write.writable_roots`): the sandbox keeps a writable root's `.git`
 * read-only, so the agent's `git commit` on its job branch failed (`index.lock: Read-only file
 * system`) and the job ended with its fix uncommitted (fresh-tester finding, Codex 0.171).
 */
export function codexConfig(ctx: HarnessContext): string {
  const url = `${ctx.serverUrl.replace(/\/+$/, '')}/v1`;
  const lines = [
    '# Written by the Flotilla runner for this job.',
    'model_provider = "flotilla"',
    `model = ${JSON.stringify(ctx.model ?? ctx.agent.model)}`,
    ...(ctx.effort ? [`model_reasoning_effort = ${JSON.stringify(codexEffort(ctx.effort))}`] : []),
    '',
    '[model_providers.flotilla]',
    'name = "Flotilla gateway"',
    `base_url = ${JSON.stringify(url)}`,
    'wire_api = "responses"',
    'env_key = "OPENAI_API_KEY"',
    'request_max_retries = 0',
    'stream_max_retries = 0',
    '',
    ...(ctx.agent.readOnly ? [] : ['[sandbox_workspace_write]', `writable_roots = [${JSON.stringify(join(ctx.workspace, '.git'))}]`, '']),
    '[analytics]',
    'enabled = false',
    '',
    '[features]',
    'plugins = false',
    '',
    wantsFlotillaTools(ctx.agent.allowedTools) ? codexMcpToml() : '', // the job-tree tools (issue 6)
  ];
  return lines.join('\n');
}

/**
 * `codex exec --json --sandbox S --skip-git-repo-check [resume SESSION] -- PROMPT`; S is
 * `read-only` for a read-only agent, else `workspace-write` (Codex's default is read-only, and
 * a blocked write still exits 0: Flotilla's own read-only mount is what enforces it).
 */
export function codexArgs(ctx: HarnessContext): string[] {
  const args = ['exec', '--json', '--sandbox', ctx.agent.readOnly ? 'read-only' : 'workspace-write', '--skip-git-repo-check'];
  if (ctx.resumeSessionId) args.push('resume', ctx.resumeSessionId);
  args.push('--', ctx.prompt);
  return args;
}

/**
 * The `codex` harness: the Codex CLI in `exec --json` mode with a per-job CODEX_HOME whose
 * config.toml points at the gateway's Responses endpoint (`/v1/responses`), the job token as
 * `OPENAI_API_KEY`. Its JSON events become the same job events as Claude Code's
 * ({@link CodexJsonParser}).
 */
export const codexHarness: Harness = {
  name: 'codex',
  turnEvent: 'tool.call',
  async prepare(ctx: HarnessContext): Promise<void> {
    await mkdir(codexHome(ctx), { recursive: true });
    await writeFile(join(codexHome(ctx), 'config.toml'), codexConfig(ctx), { mode: 0o600 });
  },
  command(ctx: HarnessContext): HarnessCommand {
    const env = harnessEnv(ctx);
    env.CODEX_HOME = codexHome(ctx);
    env.OPENAI_API_KEY = ctx.token;
    env.OPENAI_BASE_URL = `${env.ANTHROPIC_BASE_URL}/v1`;
    return { file: ctx.executable ?? defaultCodexPath(), args: codexArgs(ctx), env, cwd: ctx.workspace };
  },
  parser(ctx: HarnessContext, pid: number): HarnessParser {
    return new CodexJsonParser({ pid, workspace: ctx.workspace, branch: ctx.branch, codexHome: codexHome(ctx), model: ctx.model ?? ctx.agent.model });
  },
};
