import { z } from 'zod';
import { Id } from './ids.js';
import { Labels, RoleName, roleLabelConflict } from './labels.js';
import { UsdAmount } from './usd.js';

/**
 * Job lifecycle. `queued` → `assigned` (a runner holds the lease) → `running` (harness started)
 * → one of the terminal states. `paused` waits for a budget top-up. `cancelling`: cancel was
 * requested for a job a runner holds; its token is already dead and the runner is killing its
 * process tree; it reads `cancelled` once the runner reports the tree gone. See core/job-state.ts for
 * the allowed transitions.
 */
export const JobStatus = z.enum(['queued', 'assigned', 'running', 'paused', 'cancelling', 'succeeded', 'failed', 'cancelled', 'lost']);
export type JobStatus = z.infer<typeof JobStatus>;

/** Terminal states: a job in one of these never changes status again. */
export const TERMINAL_STATUSES: readonly JobStatus[] = ['succeeded', 'failed', 'cancelled', 'lost'];

/** Token counts for one model call or a sum of them. All integers, in tokens. */
export const TokenUsage = z.object({
  inputTokens: z.number().int().nonnegative(),
  outputTokens: z.number().int().nonnegative(),
  cacheReadTokens: z.number().int().nonnegative(),
  cacheWriteTokens: z.number().int().nonnegative(),
});
export type TokenUsage = z.infer<typeof TokenUsage>;

/** A job's metered totals, from the gateway's ledger. `costMicros` is integer micro-dollars (1e-6 USD). */
export const JobUsage = TokenUsage.extend({
  modelCalls: z.number().int().nonnegative(),
  costMicros: z.number().int().nonnegative(),
  /** Calls whose usage could not be read and were charged an estimate. */
  estimatedCalls: z.number().int().nonnegative(),
});
export type JobUsage = z.infer<typeof JobUsage>;

/** Structured outcome a job ends with. */
export const JobResult = z
  .object({
    summary: z.string().max(20_000).optional(),
    branch: z.string().optional(),
    commit: z.string().optional(),
    changedFiles: z.array(z.string()).optional(),
    needsHuman: z.boolean().optional(),
  })
  .passthrough();
export type JobResult = z.infer<typeof JobResult>;

/** `POST /api/jobs` body. */
export const CreateJobRequest = z
  .object({
    agent: z.string().min(1).max(100),
    input: z.record(z.string(), z.unknown()).default({}),
    /** Dollar budget for the job tree, USD (stored as micro-dollars). Defaults to the agent's. */
    budgetUsd: UsdAmount.optional(),
    /** Labels a runner must have, added to the agent's runnerLabels; a key the agent names takes this value instead (a run may ask for another GPU or role). */
    labels: Labels.optional(),
    /** Runner role this run asks for (label `role=<role>`), over the agent's `role`; a different `labels.role` → 400 naming `role`. */
    role: RoleName.optional(),
    /** Higher runs first; ties go to the oldest job. */
    priority: z.number().int().min(-100).max(100).default(0),
    /**
     * Continue the session of this ended job: the new job runs on the same runner, in the same
     * workspace (uncommitted changes included), resuming the harness session it recorded. An
     * empty `input` takes that job's input.
     */
    resumeJobId: Id.optional(),
    /** Effort tier for this run (`max`, `high`, `medium` or an account tier); overrides the agent's. */
    effort: z.string().min(1).max(64).optional(),
  })
  .strict()
  .superRefine((v, ctx) => {
    // `role` is the label role=<role>: a different `labels.role` beside it is refused, not overridden.
    const conflict = roleLabelConflict(v.role, v.labels);
    if (conflict) ctx.addIssue({ code: 'custom', path: ['role'], message: conflict });
    // A role label no runner could ever register with would leave the job waiting forever.
    const labelled = v.labels?.role === undefined ? null : RoleName.safeParse(v.labels.role);
    if (labelled && !labelled.success) ctx.addIssue({ code: 'custom', path: ['labels', 'role'], message: labelled.error.issues[0]?.message ?? 'invalid role' });
  });
export type CreateJobRequest = z.infer<typeof CreateJobRequest>;

/** A job as the API returns it. Times are ISO-8601 strings (server clock); money in micro-dollars. */
export const Job = z.object({
  id: z.number().int().positive(),
  parentId: z.number().int().positive().nullable(),
  rootId: z.number().int().positive(),
  agent: z.string(),
  agentVersion: z.string(),
  input: z.record(z.string(), z.unknown()),
  status: JobStatus,
  /** Why the job ended the way it did (`error`, `max_turns`, `timeout`, `budget`, `cancelled`, `runner_lost`, ...). */
  endReason: z.string().nullable(),
  /** Human-readable detail of a failure. */
  error: z.string().nullable(),
  priority: z.number().int(),
  selector: Labels,
  runnerId: z.number().int().nullable(),
  attempt: z.number().int().nonnegative(),
  budgetMicros: z.number().int().nonnegative(),
  sessionId: z.string().nullable(),
  result: JobResult.nullable(),
  createdAt: z.string(),
  assignedAt: z.string().nullable(),
  /** When the job's first attempt started running (its harness up); a resumed or retried attempt keeps it. */
  startedAt: z.string().nullable(),
  /** When the job ended; for a `paused` job, when its stopped attempt's process ended (null: still stopping, it holds its runner slot). */
  finishedAt: z.string().nullable(),
  usage: JobUsage.optional(),
  /**
   * Only on `GET /api/jobs/:id` of a queued job: why it still waits, from its latest `status`
   * event (e.g. `no runner matches gpu=true, waiting`, `runner r1: slot kept by task 3 until
   * ...`), or `waiting for a runner` when nothing more is known.
   */
  waiting: z.string().optional(),
});
export type Job = z.infer<typeof Job>;

/** `GET /api/jobs` response. `nextCursor` pages to older jobs (`before`); null when no older job matches. */
export const JobList = z.object({ jobs: z.array(Job), nextCursor: z.number().int().nullable() });
export type JobList = z.infer<typeof JobList>;
