import { z } from 'zod';
import { Id } from './ids.js';
import { JobStatus } from './job.js';
import { UsdAmount } from './usd.js';
import { describeChar, LINE_BREAKING } from './text.js';

/**
 * Tasks, receivers and their events (issue 7). Times in the API are ISO-8601 strings;
 * durations in seconds (coalescing window) as written by people.
 */

/**
 * Task status: `idle` (waiting for events or prompts), `running` (a job of its agent runs a
 * turn now), `suspended` (no wakes; events and prompts keep queueing), `completed` (done; its
 * resource keys are released), `workspace_lost` (its workspace or session is gone on its
 * runner: the last wake failed `resume_failed`; `resume` starts it afresh).
 */
export const TaskStatus = z.enum(['idle', 'running', 'suspended', 'completed', 'workspace_lost']);
export type TaskStatus = z.infer<typeof TaskStatus>;

/** Longest coalescing window: one day (issue 7), seconds. */
export const MAX_COALESCE_SECONDS = 24 * 3600;
/** Default coalescing window, seconds (issue 7). */
export const DEFAULT_COALESCE_SECONDS = 180;

/** A resource key: what a task owns, e.g. `https://github.com/acme/api/issues/42`, an alert group key. 1–1000 chars. */
export const ResourceKey = z.string().min(1, 'a resource key must not be empty').max(1000);

/** A task as the API returns it. */
export const Task = z.object({
  id: z.number().int().positive(),
  agent: z.string(),
  title: z.string(),
  status: TaskStatus,
  /** Resource keys the task owns (released when it completes). */
  keys: z.array(z.string()),
  /** Input given to every job of the task (besides `taskPrompt`). */
  input: z.record(z.string(), z.unknown()),
  coalesceSeconds: z.number().int().min(0),
  /** The job running the current turn, or null. */
  currentJobId: z.number().int().positive().nullable(),
  /** The job whose workspace every turn reuses (the first turn's), or null before the first turn. */
  workspaceJobId: z.number().int().positive().nullable(),
  /** The runner holding the workspace, or null. */
  runnerId: z.number().int().positive().nullable(),
  /** Harness session id the next turn resumes, or null. */
  sessionId: z.string().nullable(),
  /** Number of turns started. */
  turns: z.number().int().min(0),
  /** Prompts queued for the next turn. */
  queuedPrompts: z.number().int().min(0),
  /** Events recorded for the next turn. */
  pendingEvents: z.number().int().min(0),
  /** When a trailing wake is due (coalescing), or null. */
  trailingWakeAt: z.string().nullable(),
  /**
   * Idle timeout: until when the task keeps its runner slot after its last reply (ISO time; the
   * agent's `limits.idleSeconds` after the turn ended), or null when it holds none (suspended,
   * completed, never ran). The slot is free for other jobs once this time has passed.
   */
  slotHeldUntil: z.string().nullable(),
  /** Why the task is not working (e.g. the workspace is gone, or its budget is spent), or null. */
  error: z.string().nullable(),
  /**
   * The budget of all the task's turns together, micro-dollars, or null: none (each turn is a
   * job tree with its agent's `defaultBudgetUsd`). With one, each turn's tree gets what is
   * left of it, and no turn starts when nothing is left.
   */
  budgetMicros: z.number().int().positive().nullable().default(null),
  /** What the task's turns have spent so far (their job trees' settled model calls), micro-dollars. */
  spentMicros: z.number().int().nonnegative().default(0),
  /** What those trees hold reserved for model calls in flight, micro-dollars. */
  reservedMicros: z.number().int().nonnegative().default(0),
  /** The status of the current turn's job (`currentJobId`), e.g. `paused` when its tree's budget ran out; null without one. */
  turnJobStatus: JobStatus.nullable().default(null),
  /** Jobs of the current turn's tree paused for budget: its own job or children it started (a turn reading `running` may wait on them). */
  turnPausedJobs: z.number().int().nonnegative().default(0),
  // (the five above default for a server older than them: a client reads its replies all the same)
  createdAt: z.string(),
  updatedAt: z.string(),
});
export type Task = z.infer<typeof Task>;

/** `GET /api/tasks` response. */
export const TaskList = z.object({ tasks: z.array(Task) });
export type TaskList = z.infer<typeof TaskList>;

/** One event recorded for a task (or unmatched: taskId null). */
export const TaskEvent = z.object({
  id: z.number().int().positive(),
  taskId: z.number().int().positive().nullable(),
  receiver: z.string().nullable(),
  key: z.string().nullable(),
  /** e.g. `issue_comment.created`, `alert`, `prompt`. */
  kind: z.string(),
  actor: z.string().nullable(),
  /** What the agent is shown, one or more lines. */
  summary: z.string(),
  occurredAt: z.string(),
  /** The turn that carried it to the agent, or null while pending. */
  turn: z.number().int().positive().nullable(),
});
export type TaskEvent = z.infer<typeof TaskEvent>;

/** `GET /api/tasks/:id` response: the task, its recent events (newest first, ≤ 50). */
export const TaskDetail = z.object({
  task: Task,
  events: z.array(TaskEvent),
  /** The name of the runner holding the workspace (`task.runnerId`), or null: none, or the runner is gone (absent from an older server). */
  runnerName: z.string().nullable().default(null),
});
export type TaskDetail = z.infer<typeof TaskDetail>;

/** `POST /api/tasks` body. */
export const CreateTaskRequest = z
  .object({
    agent: z.string().min(1).max(100),
    // shown in listings (flotilla tasks, costs --by task, the dashboard): one line, or empty
    title: z
      .string()
      .max(500)
      .superRefine((v, ctx) => {
        if (LINE_BREAKING.test(v)) ctx.addIssue({ code: 'custom', message: `must be one line of printable text: found ${describeChar(v)} (it is shown in listings)` });
      })
      .default(''),
    keys: z.array(ResourceKey).max(100).default([]),
    input: z.record(z.string(), z.unknown()).default({}),
    /** First prompt: when given, the task wakes at once with it. */
    prompt: z.string().max(100_000).refine((p) => p.trim().length > 0, 'must not be empty').optional(),
    coalesceSeconds: z.number().int().min(0).max(MAX_COALESCE_SECONDS).optional(),
    /** Budget of all the task's turns together, USD; default: its agent's `limits.taskBudgetUsd`, else none. */
    budgetUsd: UsdAmount.optional(),
  })
  .strict();
export type CreateTaskRequest = z.infer<typeof CreateTaskRequest>;

/** `POST /api/tasks/:id/send` body: a prompt for the task's next turn. */
export const SendTaskPromptRequest = z.object({ prompt: z.string().max(100_000).refine((p) => p.trim().length > 0, 'must not be empty') }).strict();
export type SendTaskPromptRequest = z.infer<typeof SendTaskPromptRequest>;

/**
 * `POST /api/tasks/:id/budget` body: exactly one of `addUsd` (add to the task's budget; the
 * running turn's tree gets it too, and a turn paused for budget resumes) and `budgetUsd` (set
 * the budget, between turns only).
 */
export const TaskBudgetRequest = z
  .object({ addUsd: UsdAmount.optional(), budgetUsd: UsdAmount.optional() })
  .strict()
  .refine((b) => (b.addUsd === undefined) !== (b.budgetUsd === undefined), { message: 'give exactly one of addUsd (add to the budget) and budgetUsd (set it)', path: ['addUsd'] });
export type TaskBudgetRequest = z.infer<typeof TaskBudgetRequest>;

/**
 * `POST /api/tasks/:id/budget` response: the task after the change, and `resumed`, the jobs of
 * its running turn's tree that the top-up resumed from a pause for budget, lowest id first
 * (empty for a set, or when none was paused or none fits yet; default for an older server).
 */
export const TaskBudgetResult = Task.extend({ resumed: z.array(z.number().int().positive()).default([]) });
export type TaskBudgetResult = z.infer<typeof TaskBudgetResult>;

/** Where a receiver's deliveries come from; decides how they are verified and routed. */
export const ReceiverProvider = z.enum(['github', 'gitea', 'generic']);
export type ReceiverProvider = z.infer<typeof ReceiverProvider>;

/**
 * What a receiver does besides waking the owning task. `assign`: an issue or pull request
 * assigned to `login` starts a new task of `agent` owning its URL. `completeOnClose`: closing
 * it completes its task and cancels the task's running job. `wakeOnReopen`: reopening wakes
 * (and un-completes) its task.
 */
export const ReceiverPolicies = z
  .object({
    assign: z
      .object({
        login: z.string().trim().min(1, 'must not be empty').max(100),
        agent: z.string().trim().min(1, 'must not be empty').max(100),
        coalesceSeconds: z.number().int().min(0).max(MAX_COALESCE_SECONDS).optional(),
      })
      .strict()
      .optional(),
    completeOnClose: z.boolean().default(true),
    wakeOnReopen: z.boolean().default(true),
  })
  .strict();
export type ReceiverPolicies = z.infer<typeof ReceiverPolicies>;

/**
 * `POST /api/receivers` body. `generic` receivers need `keyExpr` (a CEL expression over
 * `payload` giving the resource key, e.g. `payload.groupKey`) and `auth` (`bearer`: the
 * caller sends `Authorization: Bearer <secret>`; `hmac`: `X-Signature-256: sha256=<hex>`).
 */
export const CreateReceiverRequest = z
  .object({
    name: z.string().max(63, 'receiver name must be at most 63 characters').regex(/^[a-z0-9][a-z0-9-]{0,62}$/, 'receiver name must be 1-63 lowercase letters, digits and dashes'),
    provider: ReceiverProvider,
    auth: z.enum(['hmac', 'bearer']).default('hmac'),
    keyExpr: z.string().min(1).max(2000).optional(),
    /** CEL over `payload` giving the text the agent sees for a generic event (default: the JSON). */
    summaryExpr: z.string().min(1).max(2000).optional(),
    fallbackTaskId: Id.optional(),
    policies: ReceiverPolicies.default({ completeOnClose: true, wakeOnReopen: true }),
  })
  .strict();
export type CreateReceiverRequest = z.input<typeof CreateReceiverRequest>;

/** A receiver as the API returns it: never its secret. */
export const Receiver = z.object({
  id: z.number().int().positive(),
  name: z.string(),
  provider: ReceiverProvider,
  auth: z.enum(['hmac', 'bearer']),
  keyExpr: z.string().nullable(),
  summaryExpr: z.string().nullable(),
  fallbackTaskId: z.number().int().positive().nullable(),
  policies: ReceiverPolicies,
  /** Path of its endpoint, e.g. `/hooks/github/acme`. */
  path: z.string(),
  createdAt: z.string(),
});
export type Receiver = z.infer<typeof Receiver>;

/** `POST /api/receivers` response: the receiver and its secret, shown this once. */
export const CreatedReceiver = z.object({ receiver: Receiver, secret: z.string() });
export type CreatedReceiver = z.infer<typeof CreatedReceiver>;

/** `GET /api/receivers` response. */
export const ReceiverList = z.object({ receivers: z.array(Receiver) });
export type ReceiverList = z.infer<typeof ReceiverList>;

/** What a hook endpoint answers to an accepted delivery. */
export const HookResult = z.object({
  /** `duplicate`: this delivery id was seen before (nothing done again; `taskId` is the task the first one went to). */
  outcome: z.enum(['woke', 'coalesced', 'queued', 'created', 'completed', 'unmatched', 'ignored', 'duplicate', 'recorded']),
  taskId: z.number().int().positive().nullable(),
  key: z.string().nullable(),
  /** With `ignored` for a delivery not acted on, why (e.g. a GitHub event name GitHub does not document); absent otherwise. */
  reason: z.string().optional(),
});
export type HookResult = z.infer<typeof HookResult>;
