import type { AgentDefinition, EventBody } from '../../protocol/index.js';
import type { Line } from '../lines.js';

/** Everything a harness needs to build its command line for one job attempt. */
export interface HarnessContext {
  jobId: number;
  /** The job tree's root job id (default: jobId). */
  rootId?: number;
  attempt: number;
  agent: AgentDefinition;
  input: Record<string, unknown>;
  /** The rendered prompt (agent.promptText with `{{input.*}}`, `{{job.*}}` filled). */
  prompt: string;
  /** Job-scoped token: the model API key at the gateway and the Flotilla API token. Secret. */
  token: string;
  /** Control plane URL (http[s]://host:port); the gateway is served at its root. */
  serverUrl: string;
  /** The workspace (cwd of the harness). */
  workspace: string;
  branch: string;
  /** The harness's own HOME (`<workDir>/homes/job-<id>`). */
  home: string;
  resumeSessionId: string | null;
  /** Model to pass (`--model`); default agent.model. Set from the effort tier. */
  model?: string;
  /** Effort level from the effort tier (`low`, `medium`, `high`, `max`); absent: the harness's default. */
  effort?: string;
  /** Override of the harness executable (tests, custom installs). */
  executable?: string;
}

/** The process to start: `file args...` with exactly `env` (nothing else is inherited). */
export interface HarnessCommand {
  file: string;
  args: string[];
  env: Record<string, string>;
  cwd: string;
  /** Text written to the process's stdin, then EOF. Absent: stdin is /dev/null. */
  stdin?: string;
}

/** How the harness run ended, as far as its output says. */
export interface HarnessOutcome {
  status: 'succeeded' | 'failed';
  /** Why it failed: `error`, `max_turns`, `budget`, `harness_start`, ... */
  reason?: string;
  /** Human-readable failure detail. */
  error?: string;
  /** The harness's final text. */
  summary?: string;
  sessionId?: string;
}

/** How often the runner calls {@link HarnessParser.tick}, ms. */
export const PARSER_TICK_MS = 50;

/** Turns one run's output lines into job events, then into an outcome. */
export interface HarnessParser {
  /** One stdout line → zero or more events. Never throws; unparseable lines become `log` events. */
  stdout(line: Line): EventBody[];
  /** One stderr line → zero or more events (kept for the failure message, too). */
  stderr(line: Line): EventBody[];
  /** Events to emit as soon as the process started (e.g. `harness.started` when the output never says). */
  begin?(): EventBody[];
  /**
   * Called about every {@link PARSER_TICK_MS} while the process runs: events that became ready
   * without a new output line (e.g. held back until a file the harness writes caught up).
   */
  tick?(): EventBody[];
  /** Events still held back once the output ended (called once, before {@link finish}). */
  flush?(): EventBody[];
  /** True once the output showed the harness cannot work (e.g. refused to start): kill it now. */
  readonly fatal: boolean;
  /** The outcome, once the process exited with `code`/`signal`. */
  finish(exit: { code: number | null; signal: string | null; spawnError?: Error }): HarnessOutcome;
}

/**
 * A harness adapter (`claude-code` now; `codex`, `command` later): how to start the program
 * that drives the model, and how to read its output.
 */
export interface Harness {
  readonly name: string;
  /**
   * Which event marks one model turn for the runner's own `limits.maxTurns` count: `usage`
   * (default: one per model call) or `tool.call` (Codex reports usage once per run, so each
   * tool-using model call is counted by its tool call instead).
   */
  readonly turnEvent?: 'usage' | 'tool.call';
  /** Writes what the harness needs before it starts (e.g. Codex's config.toml in its home). */
  prepare?(ctx: HarnessContext): Promise<void>;
  /** Builds the command. @throws Error naming the problem when the context cannot be run (e.g. no executable). */
  command(ctx: HarnessContext): HarnessCommand;
  /** A fresh parser for one run whose leader has process id `pid`. */
  parser(ctx: HarnessContext, pid: number): HarnessParser;
}
