import { z } from 'zod';
import { Labels, RoleName } from './labels.js';
import { UsdAmount } from './usd.js';
import { HarnessModel } from './harness-model.js';

/** The programs that can drive a model for a job. */
export const HarnessName = z.enum(['claude-code', 'codex', 'command']);
export type HarnessName = z.infer<typeof HarnessName>;

/** What a job holds on its runner (issue 5, capacity kinds). */
export const JobHolds = z.enum(['runner', 'workspace', 'browser', 'none']);
export type JobHolds = z.infer<typeof JobHolds>;

/** Limits a job runs under. Times in seconds (as written in agent.yaml), budget in USD. */
export const AgentLimits = z
  .object({
    /** Maximum model turns the harness may take. */
    maxTurns: z.number().int().positive().max(10_000).default(50),
    /** Wall-clock limit for the whole job, seconds. */
    timeoutSeconds: z.number().int().positive().max(7 * 24 * 3600).default(1800),
    /** Budget for the job tree when the run does not give one, USD. */
    defaultBudgetUsd: UsdAmount.default(5),
    /**
     * Budget of a task's turns together when the task does not give one, USD (issue 3, per
     * task); absent: a task has none unless given, and each turn gets `defaultBudgetUsd`.
     */
    taskBudgetUsd: UsdAmount.optional(),
    /**
     * Idle limit, seconds: no harness output and no model call for this long ends the job
     * `failed`, reason `blocked_on_input` (e.g. a process waiting on an interactive prompt).
     * A job with a child that has not ended (queued, running, paused for budget) is waiting on
     * it, not idle (server/model-activity.ts).
     */
    idleSeconds: z.number().int().positive().max(24 * 3600).default(600),
  })
  .strict();
export type AgentLimits = z.infer<typeof AgentLimits>;

/**
 * An agent definition: `agents/<name>/agent.yaml`. The prompt lives in a separate file
 * (`prompt`, relative to the agent folder) and is inlined as `promptText` when loaded.
 */
export const AgentFile = z
  .object({
    name: z.string().regex(/^[a-z][a-z0-9-]{0,62}$/, 'agent name must be lowercase letters, digits and dashes'),
    version: z.string().min(1).max(64).default('1'),
    description: z.string().max(2000).default(''),
    harness: HarnessName,
    /** Model name given to the harness ({@link HarnessModel}); the gateway maps it to a provider. */
    model: HarnessModel.default('claude-sonnet-4-5'),
    /** Effort tier (`max`, `high`, `medium`, or one the account defines): model + effort level; overrides `model`. A run may override it. */
    effort: z.string().min(1).max(64).optional(),
    /** Prompt file relative to the agent folder; `{{input.repo}}`-style placeholders are filled from the input. */
    prompt: z.string().min(1).default('prompt.md'),
    /** Tools the harness may use (Claude Code tool names, e.g. `Bash`, `Read`, `Edit`). */
    allowedTools: z.array(z.string().min(1)).default([]),
    limits: AgentLimits.default({ maxTurns: 50, timeoutSeconds: 1800, defaultBudgetUsd: 5, idleSeconds: 600 }),
    /**
     * Read-only mode: the workspace is mounted read-only for the harness and everything it
     * starts (a private mount namespace); the runner verifies by trying a write before it
     * starts the harness and fails the job (`read_only_unavailable`) when it cannot enforce it.
     */
    readOnly: z.boolean().default(false),
    /**
     * What a job of this agent does when its tree's budget cannot cover a model call (issue 3):
     * `pause` (default) waits as `paused` (reason `budget`) until a top-up resumes it in the
     * same session and workspace; `fail` ends it `failed` (reason `budget`).
     */
    onBudgetExhausted: z.enum(['pause', 'fail']).default('pause'),
    /** Labels a runner must have to run this agent. */
    runnerLabels: Labels.default({}),
    /**
     * What a job of this agent holds on its runner while it runs (issue 5, capacity): `runner`
     * (the whole runner: runs alone), `workspace` (one parallel-job slot; two jobs on the same
     * workspace wait for each other), `browser` (a slot and one of the runner's browser slots),
     * `none` (no slot; runs beside anything but a whole-runner job). Default `workspace`.
     */
    holds: JobHolds.default('workspace'),
    /** The runner role this agent asks for (`build`, `reviewer`): the job needs the runner label `role=<role>`. */
    role: RoleName.optional(),
    /** How many times a job whose runner is lost (or revoked) goes back to the queue for another runner, with a new attempt (0–10). */
    retries: z.number().int().min(0).max(10).default(0),
    /** Tasks of this agent (issue 7): coalescing window, seconds (0 to 86,400); a receiver policy or the task itself may override it. Default 180. */
    coalesceSeconds: z.number().int().min(0).max(86_400).optional(),
    /** JSON Schema (draft 2020-12 subset supported by Ajv) the job input must satisfy. */
    inputSchema: z.record(z.string(), z.unknown()).default({ type: 'object' }),
    /** For harness `command`: the executable and its arguments. */
    command: z.array(z.string().min(1)).min(1).optional(),
  })
  .strict();
export type AgentFile = z.infer<typeof AgentFile>;

/** A loaded agent: the file plus its prompt text. What the API returns and a runner receives. */
export const AgentDefinition = AgentFile.extend({ promptText: z.string() });
export type AgentDefinition = z.infer<typeof AgentDefinition>;
