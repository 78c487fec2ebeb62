import { harnessEnv } from './claude-code.js';
import { CommandEventParser } from './command-stream.js';
import type { Harness, HarnessCommand, HarnessContext, HarnessParser } from './types.js';

/**
 * What a `command` harness reads on stdin (one JSON document, then EOF). Documented in
 * docs/command-harness.md.
 */
export interface CommandInput {
  job: { id: number; rootId: number; attempt: number; branch: string };
  agent: { name: string; version: string; model: string; effort: string | null; allowedTools: string[]; limits: { maxTurns: number; timeoutSeconds: number; idleSeconds: number }; readOnly: boolean };
  /** The job input, as given to the API. */
  input: Record<string, unknown>;
  /** The agent's prompt with placeholders filled. */
  prompt: string;
  /** The workspace (also the process's cwd). */
  workspace: string;
  /** Session to resume (the `session` line of an earlier job), or null. */
  resumeSessionId: string | null;
}

/** The stdin document for one attempt (no secret in it: the token is only in the environment). */
export function commandInput(ctx: HarnessContext): CommandInput {
  const a = ctx.agent;
  return {
    job: { id: ctx.jobId, rootId: ctx.rootId ?? ctx.jobId, attempt: ctx.attempt, branch: ctx.branch },
    agent: {
      name: a.name,
      version: a.version,
      model: ctx.model ?? a.model,
      effort: ctx.effort ?? null,
      allowedTools: a.allowedTools,
      limits: { maxTurns: a.limits.maxTurns, timeoutSeconds: a.limits.timeoutSeconds, idleSeconds: a.limits.idleSeconds },
      readOnly: a.readOnly,
    },
    input: ctx.input,
    prompt: ctx.prompt,
    workspace: ctx.workspace,
    resumeSessionId: ctx.resumeSessionId,
  };
}

/**
 * The environment of a command: everything {@link harnessEnv} gives (PATH, HOME = the job's
 * home, `ANTHROPIC_BASE_URL`/`ANTHROPIC_API_KEY`, `FLOTILLA_URL`/`FLOTILLA_JOB_TOKEN`/
 * `FLOTILLA_JOB_ID`) plus the OpenAI-style pair `OPENAI_BASE_URL` (= `<gateway>/v1`) and
 * `OPENAI_API_KEY` (the job token), and `PYTHONUNBUFFERED=1` so a Python agent's lines are not
 * held in a buffer.
 */
export function commandEnv(ctx: HarnessContext, base: NodeJS.ProcessEnv = process.env): Record<string, string> {
  const env = harnessEnv(ctx, base);
  env.OPENAI_BASE_URL = `${env.ANTHROPIC_BASE_URL}/v1`;
  env.OPENAI_API_KEY = ctx.token;
  env.PYTHONUNBUFFERED = '1';
  return env;
}

/**
 * The `command` harness: any executable (`agent.command`: file and arguments, no shell), cwd
 * the workspace, the job input as JSON on stdin then EOF. Its stdout lines that are protocol
 * events become job events, other lines `log`; exit 0 = succeeded (see
 * {@link CommandEventParser} and docs/command-harness.md).
 * A relative `command[0]` containing a `/` is resolved against the workspace by the OS (cwd);
 * a bare name is looked up on PATH.
 * @throws Error when the agent has no `command`.
 */
export const commandHarness: Harness = {
  name: 'command',
  command(ctx: HarnessContext): HarnessCommand {
    const argv = ctx.agent.command;
    if (!argv || argv.length === 0) throw new Error(`agent ${ctx.agent.name}: harness command needs a "command" list (executable and arguments) in agent.yaml`);
    const [file, ...args] = argv as [string, ...string[]];
    return { file: ctx.executable ?? file, args, env: commandEnv(ctx), cwd: ctx.workspace, stdin: `${JSON.stringify(commandInput(ctx))}\n` };
  },
  parser(ctx: HarnessContext, pid: number): HarnessParser {
    return new CommandEventParser({ pid, workspace: ctx.workspace, branch: ctx.branch, command: ctx.agent.command?.join(' ') ?? '' });
  },
};
