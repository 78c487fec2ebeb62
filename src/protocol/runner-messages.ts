import { z } from 'zod';
import { Id } from './ids.js';
import { Labels, RoleName } from './labels.js';
import { RunnerName, UpdateVersion } from './runner.js';
import { AgentDefinition } from './agent.js';
import { EventBody } from './events.js';
import { LINE_BREAKING } from './text.js';

/**
 * The runner ⇄ server protocol, over one WebSocket per runner at `GET /api/runners/connect`
 * (the runner's credential as `Authorization: Bearer`). Every frame is one JSON text message
 * of the shapes below; the server and runner each reject a frame that fails its schema.
 *
 * Reliability: a runner numbers each job attempt's events `rseq` = 1, 2, 3, ... and keeps
 * them until the server acknowledges them (`ack.upTo`); after a reconnect it resends every
 * unacknowledged event. The server stores each (job, attempt, rseq) once, so resends are
 * harmless, and assigns the job-wide `seq` as it stores.
 *
 * Fencing: every job message carries the assignment's `attempt`. The server refuses anything
 * from an attempt that is no longer the job's current one, and tells the runner to kill it.
 */

/**
 * The window a runner spreads its reconnects over, and their longest backoff, ms (runner.ts
 * default reconnect policy). The server's liveness sweep waits for it after a restart
 * (server/sweeper.ts), so a fleet coming back is not declared lost meanwhile.
 */
export const RECONNECT_WINDOW_MS = 10_000;

/** An event as the runner uploads it. */
export const UploadedEvent = z.intersection(z.object({ rseq: Id, at: z.string() }), EventBody);
export type UploadedEvent = z.infer<typeof UploadedEvent>;

/** What the runner is running, reported on (re)connect. */
export const RunningJobReport = z.object({
  jobId: Id,
  attempt: Id,
});
export type RunningJobReport = z.infer<typeof RunningJobReport>;

/**
 * A runner process's instance id (`hello.instance`): random, made once per runner process
 * (runner.ts: a UUID), the same on every reconnect of that process. 1–64 visible ASCII
 * characters (no spaces or control characters). The server refuses a second process using the
 * same runner credential (close 4409) instead of letting the two replace each other.
 */
export const RunnerInstance = z
  .string()
  .min(1)
  .max(64)
  .regex(/^[\x21-\x7e]+$/, 'instance must be 1-64 visible ASCII characters (no spaces or control characters)');

export const RunnerToServer = z.discriminatedUnion('type', [
  /** First frame after connecting. */
  z.object({
    type: z.literal('hello'),
    /**
     * The name the runner asks for (the rule of `runner --name` and registration); absent: it
     * keeps the name it has (a runner started again without `--name`).
     */
    name: RunnerName.optional(),
    /** A `role` label must be a role (the rule of `--role` and registration). */
    labels: Labels.superRefine((l, ctx) => {
      if (l.role === undefined) return;
      const r = RoleName.safeParse(l.role);
      if (!r.success) ctx.addIssue({ code: 'custom', path: ['role'], message: r.error.issues[0]?.message ?? 'invalid role' });
    }),
    capacity: z.number().int().min(1).max(4),
    /** Browser slots the runner offers (1–4, counted as at most `capacity`); absent = 1. */
    browserSlots: z.number().int().min(1).max(4).optional(),
    /** The runner's version: one line of printable text (it is shown in listings). */
    version: z
      .string()
      .max(100)
      .refine((v) => !LINE_BREAKING.test(v), 'version must be printable text without control characters'),
    running: z.array(RunningJobReport),
    /**
     * The version the runner is updating itself to, when it reconnects in the middle of a
     * self-update (`runner.update`: draining or running its update command): the server keeps
     * it `updating`, out of dispatch. Absent once the re-executed runner comes back.
     */
    updating: UpdateVersion.optional(),
    /**
     * This runner process's {@link RunnerInstance}. While a connection of the same runner with
     * another instance is live (heard within the heartbeat timeout, on any server replica), the
     * server refuses this one: an `error` frame, then close 4409; the same instance reconnecting
     * replaces its old socket. Absent (older runners): a new connection replaces the old one.
     */
    instance: RunnerInstance.optional(),
    /**
     * False: this runner cannot update itself (the runner inside `flotilla up`, which cannot
     * restart its own process): the server refuses `runners update` for it (409
     * `cannot_update`) instead of sending a `runner.update` it would only refuse. Absent (and
     * older runners): it can.
     */
    selfUpdate: z.boolean().optional(),
  }),
  z.object({ type: z.literal('heartbeat'), running: z.array(RunningJobReport) }),
  /**
   * Progress of a self-update the server asked for (`runner.update`): `draining` it takes no
   * new job and waits for its running ones; `installing` its update command runs; `restarting`
   * the command succeeded and it re-executes itself (it reconnects on the new code); `failed`
   * the command failed (`exitCode`, null when it was killed or could not start) or the update
   * could not start: `detail` says why (the command's last stderr lines, secrets masked, ≤ 2000
   * characters); the runner is back to taking jobs.
   */
  z.object({
    type: z.literal('runner.update'),
    phase: z.enum(['draining', 'installing', 'restarting', 'failed']),
    version: UpdateVersion,
    exitCode: z.number().int().nullable().optional(),
    detail: z.string().max(2000).optional(),
  }),
  /** The runner took the assignment and is preparing the workspace. */
  z.object({ type: z.literal('job.accepted'), jobId: Id, attempt: Id }),
  /** The runner cannot take the assignment (e.g. at capacity); the job goes back to the queue. */
  z.object({ type: z.literal('job.rejected'), jobId: Id, attempt: Id, reason: z.string() }),
  /**
   * Events, rseq consecutive from the last one acked (a gap closes the connection, 4400: the
   * runner resends from its last ack after reconnecting). A `job.finished` event ends the
   * attempt: events after it are not stored (the runner is told `job.cancel` with `discard`).
   */
  z.object({
    type: z.literal('job.events'),
    jobId: Id,
    attempt: Id,
    events: z.array(UploadedEvent).min(1).max(1000),
  }),
]);
export type RunnerToServer = z.infer<typeof RunnerToServer>;

/** Everything a runner needs to run one job attempt. */
export const JobAssignment = z.object({
  jobId: z.number().int().positive(),
  rootId: z.number().int().positive(),
  attempt: z.number().int().positive(),
  agent: AgentDefinition,
  input: z.record(z.string(), z.unknown()),
  /** Job-scoped secret: the harness's model API key at the gateway, and its API token. Dies with the attempt. */
  token: z.string(),
  /** Harness session to resume, if any. */
  resumeSessionId: z.string().nullable(),
  /** Placed by `jobs start --force`: run it even past the runner's parallel-job capacity. */
  force: z.boolean().optional(),
  /**
   * The runner's parallel-job capacity as the server counts it (the owner's setting wins over
   * the runner's `--capacity`); the runner's own at-capacity check uses it. Absent: its own.
   */
  capacity: z.number().int().min(1).max(4).optional(),
  /**
   * The job whose workspace (and harness HOME) this attempt continues in, on this runner: set
   * for a job that resumes another job's session (`resumeJobId`). Absent/null: the job's own
   * (reused when `resumeSessionId` is set, else prepared fresh).
   */
  workspaceJobId: z.number().int().positive().nullable().optional(),
  /** Model and effort level from the effort tier the run picked; absent: the agent's model, the harness's default effort. */
  effort: z.object({ tier: z.string(), model: z.string().min(1), level: z.string().min(1) }).optional(),
});
export type JobAssignment = z.infer<typeof JobAssignment>;

export const ServerToRunner = z.discriminatedUnion('type', [
  z.object({
    type: z.literal('welcome'),
    runnerId: z.number().int().positive(),
    /** How often to heartbeat, milliseconds. */
    heartbeatIntervalMs: z.number().int().positive(),
    /**
     * The server's heartbeat timeout, milliseconds: a runner it has not heard from for this long
     * is offline and its jobs are `lost` or retried on another runner. The runner stops its own
     * running jobs before that can happen (runner/lease.ts). Absent (an older server): the
     * runner assumes twice `heartbeatIntervalMs`, the shortest timeout a server accepts.
     */
    heartbeatTimeoutMs: z.number().int().positive().optional(),
    serverTime: z.string(),
    /**
     * Labels of the runner's `hello` that were not taken because its registration token binds
     * another value for the key (`key=value` as the runner asked, the bound value in effect).
     * Absent when none; the runner tells its user.
     */
    ignoredLabels: z.array(z.object({ key: z.string(), asked: z.string(), bound: z.string() })).optional(),
    /**
     * The runner's name as the server keeps it, present only when it is not the one the `hello`
     * asked for: that name belongs to another runner that is not revoked (names are unique
     * among those; core/runner-names.ts). The runner tells its user.
     */
    name: z.string().optional(),
  }),
  z.object({ type: z.literal('job.assign'), assignment: JobAssignment }),
  /**
   * Stop this attempt: SIGTERM, grace, SIGKILL of its process group. `discard: true` also
   * says the server no longer accepts this attempt's events (a stale attempt: reassigned,
   * lost, requeued or ended), so a runner drops what it has not delivered; without it the
   * runner keeps delivering them (a cancel repeated while the job is `cancelling` must not
   * lose its final `job.finished`).
   */
  z.object({
    type: z.literal('job.cancel'),
    jobId: z.number().int().positive(),
    attempt: z.number().int().positive(),
    reason: z.string(),
    discard: z.boolean().optional(),
    /**
     * A budget pause (issue 3): the job stays `paused` for a top-up that resumes it in the same
     * session and workspace. The runner first lets the harness exit on its own for a short
     * settle time (it was just refused a model call), then stops it as for any cancel; either
     * way it reports `job.finished`, and the server holds the runner slot until then. An older
     * runner ignores the field and stops it at once.
     */
    pause: z.boolean().optional(),
    /**
     * The tree's budget is spent and the job's agent says `onBudgetExhausted: fail`: the job is
     * not paused; the runner lets the harness exit on its own for the same settle time as a
     * pause, then stops it, and reports the attempt `failed`, reason `budget`, `reason` as its
     * error, whatever the harness's own ending (an attempt that had finished before the message
     * arrived keeps its outcome). An older
     * runner ignores the field and stops it at once (reported `cancelled`).
     */
    fail: z.boolean().optional(),
  }),
  /**
   * Model-call activity of the attempts the runner reported, the reply to every `heartbeat`
   * that reports any (issue 4: the idle limit is "no output AND no model call for N
   * seconds"). Per attempt that made model calls: `inFlight` calls now and `idleMs`, how long
   * ago (server clock, ms) a call last started or ended. Relative, so clock skew does not
   * matter. A job waiting on a child that has not ended counts one call more, `idleMs` 0 (it
   * is not blocked on input). Attempts without any call or child are left out. An older
   * runner ignores the frame.
   */
  z.object({
    type: z.literal('job.activity'),
    jobs: z
      .array(z.object({ jobId: z.number().int().positive(), attempt: z.number().int().positive(), inFlight: z.number().int().nonnegative(), idleMs: z.number().int().nonnegative() }))
      .max(1000),
  }),
  /**
   * Update yourself to `version` (an npm version or dist-tag): take no new job (reject
   * assignments), let the running jobs finish, run the update command, then re-execute on the
   * new code; report each step with a `runner.update` frame. A runner already updating ignores
   * a repeat. An older runner refuses the frame (it fails its schema); the server's `updating`
   * mark then lapses (server/runner-updates.ts).
   */
  z.object({ type: z.literal('runner.update'), version: UpdateVersion }),
  /** Events up to and including `upTo` (rseq) for this attempt are stored. */
  z.object({ type: z.literal('ack'), jobId: z.number().int().positive(), attempt: z.number().int().positive(), upTo: z.number().int().nonnegative() }),
  z.object({ type: z.literal('error'), message: z.string() }),
]);
export type ServerToRunner = z.infer<typeof ServerToRunner>;

/**
 * Why a runner gave its running attempts up when it was stopped (Ctrl-C, SIGTERM: runner.ts
 * stop), the end of its `progress` event of phase `lost`. The control plane ends such an
 * attempt at once and gives that connection no further job (server/hub-lost-attempt.ts).
 */
export const RUNNER_STOPPED_REASON = 'runner stopped';

/**
 * The start of the `progress` event (phase `lost`) a runner sends when it gives an attempt up
 * with its processes gone (runner/job-runner.ts), followed by why (e.g. {@link RUNNER_STOPPED_REASON});
 * the control plane reads the why from it (server/hub-lost-attempt.ts).
 */
export const ATTEMPT_GIVEN_UP = 'runner gave the attempt up, its processes are gone: ';
