import type { TaskStore } from './tasks-types.js';
import type { AgentVersionStore } from './agent-versions-types.js';
import type { EffortTierStore } from './effort-tiers-types.js';
import type { DashboardStore } from './dashboard-types.js';
import type { DispatchStore } from './dispatch-types.js';
import type { LedgerStore } from './ledger-types.js';
import type { JobStatus, JobResult, Labels, EventBody, JobEvent } from '../protocol/index.js';
import type { JobHolds } from '../protocol/index.js';
import type { TreeLimits } from '../protocol/index.js';
import type { ChildActivity, OrphanedJob } from './job-tree.js';
import type { InstanceClaimRequest, RunnerInstanceClaim } from './runner-instance.js';
import type { RunnerRename } from './runner-names.js';

/**
 * The storage contract. Two implementations: SQLite (better-sqlite3, embedded default) and
 * PostgreSQL (node-postgres), both through Kysely; one conformance suite (store/conformance.ts)
 * runs against both.
 *
 * Conventions at this boundary (the drivers differ, callers never see it):
 * - times are epoch milliseconds (`number`), always from the server's clock, passed in by the
 *   caller as `now` so tests can control it;
 * - ids are positive integers (`number`);
 * - money is integer micro-dollars (`number`, 1 USD = 1,000,000);
 * - JSON columns come back parsed.
 * Every method that changes more than one row does it in one transaction: either all of it
 * is stored or none.
 */
export interface Store extends TaskStore, AgentVersionStore, EffortTierStore, DashboardStore, DispatchStore, LedgerStore {
  /** `sqlite` or `postgres`. */
  readonly dialect: 'sqlite' | 'postgres';
  /**
   * True when a budget settle issued in one event-loop turn is committed before any later call
   * of this store runs, so a caller need not await it for later requests (and reads) to see
   * it: on SQLite the gateway's reserves and settles run in issue order (the group commit of
   * sqlite-group-commit.ts, or the writer thread's batches, sqlite-writer.ts), and every other
   * method first waits for those already issued (sqlite-fast.ts).
   * Absent (PostgreSQL, a round trip away; test stores): await the write.
   */
  readonly writesInTurnOrder?: boolean;
  close(): Promise<void>;

  // --- API tokens (users of the HTTP API) -------------------------------------------------
  createApiToken(t: { name: string; role: 'admin' | 'member'; tokenHash: string; now: number }): Promise<ApiTokenRow>;
  findApiTokenByHash(tokenHash: string): Promise<ApiTokenRow | null>;
  countApiTokens(): Promise<number>;

  // --- runner registration ---------------------------------------------------------------
  createRegistrationToken(t: { tokenHash: string; labels: Labels; expiresAt: number; now: number }): Promise<RegistrationTokenRow>;
  /**
   * Uses a registration token: returns its labels and marks it used, in one step, only if it
   * exists, is unused, not revoked and `expiresAt > now`. A second call with the same hash returns null.
   */
  consumeRegistrationToken(tokenHash: string, now: number): Promise<{ labels: Labels } | null>;
  /**
   * Registration tokens by id, oldest first (never a token or its hash). With `liveAt` (epoch
   * ms): only the ones still usable then (unused, not revoked, `expiresAt > liveAt`).
   */
  listRegistrationTokens(q?: { liveAt?: number }): Promise<RegistrationTokenRow[]>;
  /**
   * Revokes registration token `id`: it is never consumed afterwards. Changes only an unused,
   * unrevoked token (revoking twice keeps the first `revokedAt`; a used one stays as it was).
   * Returns the token as it now is, or null when no token has that id.
   */
  revokeRegistrationToken(id: number, now: number): Promise<RegistrationTokenRow | null>;
  /** `boundLabels`: the registration token's labels (0009, binding; default {}). `browserSlots` 1–4, default 1. */
  createRunner(r: { name: string; labels: Labels; capacity: number; credentialHash: string; now: number; hold?: RunnerHold; boundLabels?: Labels; browserSlots?: number }): Promise<RunnerRow>;
  findRunnerByCredentialHash(credentialHash: string): Promise<RunnerRow | null>;
  getRunner(id: number): Promise<RunnerRow | null>;
  listRunners(): Promise<RunnerRow[]>;
  /**
   * Records a (re)connect or heartbeat: sets connected, last heartbeat = now, and any given
   * fields (`name` as is: the hub uses renameRunner). With `conn`: only while that connection
   * holds the runner (claimRunnerInstance). Returns false (nothing changed) when the runner
   * does not exist, was revoked, or (`conn`) is held by another connection.
   */
  touchRunner(id: number, now: number, fields?: { labels?: Labels; capacity?: number; browserSlots?: number; version?: string; name?: string; conn?: string }): Promise<boolean>;
  /**
   * Registers a runner under the name rule (core/runner-names.ts): the asked `name` when no
   * runner that is not revoked has it, else the first free `NAME-2`, `NAME-3`, ...; the
   * returned row has the name it got. Otherwise as createRunner (same fields and errors).
   */
  registerRunner(r: { name: string; labels: Labels; capacity: number; credentialHash: string; now: number; hold?: RunnerHold; boundLabels?: Labels; browserSlots?: number }): Promise<RunnerRow>;
  /**
   * Renames runner `id` (a `hello` asking for another name) unless another runner that is not
   * revoked has that name: then `{ renamed: false, reason: 'taken', takenBy }` (its id) and
   * nothing changes. `unknown` for a revoked or missing runner.
   */
  renameRunner(id: number, name: string): Promise<RunnerRename>;
  /**
   * A `hello` claims the runner for connection `conn` (a server-side id, one per socket), one
   * conditional UPDATE: taken when nobody holds it, the holder is the same process
   * (`instance`), either side is an older runner without an instance (`instance` null: the
   * newest connection wins, as before), or the holder has sent nothing since `staleBefore`.
   * Taking it counts as a heartbeat (connected, last heartbeat = now). Otherwise `in_use` with
   * the live holder (instance, since, last heartbeat, name, version); `revoked` for a revoked or
   * unknown runner. Times epoch ms.
   */
  claimRunnerInstance(id: number, r: InstanceClaimRequest): Promise<RunnerInstanceClaim>;
  /**
   * Connection `conn` of runner `id` closed: when it still holds the runner, the runner is
   * disconnected and free for any process; else nothing changes. True when it held it.
   */
  releaseRunnerInstance(id: number, conn: string): Promise<boolean>;
  /**
   * The owner's capacity setting (0009): `capacity` parallel jobs 1–4 and `browserSlots` 1–4;
   * a given field replaces the stored one (null clears it: the runner's own offer counts
   * again), an absent one is kept. The effective browser slots must not exceed the effective
   * capacity. Returns the updated runner, or null when it does not exist.
   * @throws Error naming the field when a value is out of range or browser slots > capacity.
   */
  setRunnerCapacity(id: number, s: { capacity?: number | null; browserSlots?: number | null }): Promise<RunnerRow | null>;
  /** Marks the runner disconnected (its WebSocket closed). Does not touch its jobs. */
  setRunnerDisconnected(id: number, now: number): Promise<void>;
  /**
   * Liveness sweep: every runner whose last heartbeat is older than `cutoff` and is not yet
   * offline becomes offline; each of its `assigned` jobs (never started) goes back to `queued`
   * with no retry used (`unstarted: true`; runner, assignment and token cleared) — or, when it went
   * back that way 3 times already (store/unstarted.ts), fails (`unstarted: true`, endReason
   * `runner_never_started`, finishedAt = now, token cleared) — and each
   * `running` one becomes `lost` (endReason `runner_lost`, finishedAt = now, token cleared) —
   * or, when the job has retries left (agent `retries`), goes back to `queued` (runner and
   * token cleared, retries left − 1; the next claim gives it a new attempt). Returns the jobs
   * it changed (status `lost`, `cancelled` or `queued`), each with `runnerId` = the runner its
   * attempt was on (a queued one's stored row has none).
   */
  sweepStaleRunners(cutoff: number, now: number): Promise<SweptJob[]>;
  /**
   * A lost attempt (its runner reconnected without it): when job `id`, still `assigned` or
   * `running` at `attempt`, has retries left, it goes back to `queued` as in sweepStaleRunners
   * (runner, token and assignment cleared, retries left − 1). Returns the requeued job with
   * `runnerId` = the runner the attempt was lost on (stored: none), or null (no retry left, or
   * no longer that attempt): the caller then marks it lost.
   */
  retryLostJob(id: number, attempt: number, now: number): Promise<JobRow | null>;
  /**
   * Sets (or with null clears) the runner's dispatch hold: until `until` (epoch ms) the
   * dispatcher gives it no queued job. `kind` `provisioning` = held while it finishes setup.
   * Returns the updated runner, or null when it does not exist.
   */
  setRunnerHold(id: number, hold: RunnerHold | null): Promise<RunnerRow | null>;
  /** Ids of runners whose hold ends after `now` (epoch ms). */
  listHeldRunnerIds(now: number): Promise<number[]>;
  /**
   * Revokes a runner, one transaction: revokedAt = now (the first time's kept), disconnected, its hold cleared.
   * Its assigned/running/cancelling jobs keep their status with their tokens cleared (`jobs`):
   * the liveness sweep ends them like a lost runner's once its lease has run out
   * (sweepStaleRunners). Jobs whose session can only resume there — `paused` for budget on it,
   * or `queued` pinned to it — end `lost` now (`stranded`: endReason `runner_revoked`, the error
   * naming the runner; finishedAt kept, or now). Null when the runner does not exist; a second
   * call returns it with no jobs.
   */
  revokeRunner(id: number, now: number): Promise<RevokedRunner | null>;
  /** Every assigned/running job as (jobId, runnerId, attempt, status), in one query. */
  listActiveAssignments(): Promise<ActiveAssignment[]>;
  /**
   * Queued jobs in dispatch order (priority descending, then oldest first), at most `limit`
   * (1–5000), starting after `after` (a previous page's last job) when given: id, priority,
   * selector and pinned runner only — what the dispatcher matches on.
   */
  listQueuedForDispatch(limit: number, after?: { priority: number; id: number }): Promise<QueuedJobRef[]>;
  /** Number of jobs in `queued`. */
  countQueuedJobs(): Promise<number>;
  /** The runner's most recent jobs (any status), newest first, at most `limit` (1–100). */
  listRecentJobsForRunner(runnerId: number, limit: number): Promise<JobRow[]>;

  // --- jobs ------------------------------------------------------------------------------
  /** Inserts a queued job (root when `parentId` is null: rootId = its own id). */
  createJob(j: NewJob): Promise<JobRow>;
  getJob(id: number): Promise<JobRow | null>;
  /** Newest first; `before` is an id cursor (jobs with id < before). */
  listJobs(q: JobListQuery): Promise<JobRow[]>;
  /**
   * Dispatch: atomically takes the highest-priority, oldest queued job whose selector is a
   * subset of `runner.labels`, and assigns it to the runner: status `assigned`, attempt + 1,
   * runnerId, assignedAt = now, tokenHash. Safe under concurrency: two callers never get the
   * same job (SQLite: one writer; PostgreSQL: `FOR UPDATE SKIP LOCKED`). Null when none match.
   */
  claimJob(runner: { id: number; labels: Labels }, tokenHash: string, now: number): Promise<JobRow | null>;
  /** Like claimJob but for one given job id (still only if queued). */
  claimJobById(jobId: number, runner: { id: number; labels: Labels }, tokenHash: string, now: number, holds?: JobHolds): Promise<JobRow | null>;
  /**
   * Fenced, conditional status change: applies only when the job's current attempt equals
   * `attempt` (pass null to skip the attempt check) and its status is one of `from`.
   * Returns the updated row, or null when the condition did not hold (nothing changed).
   * Terminal targets set finishedAt = now and clear the token hash.
   */
  transitionJob(
    jobId: number,
    attempt: number | null,
    from: readonly JobStatus[],
    to: JobStatus,
    now: number,
    fields?: { endReason?: string | null; error?: string | null; sessionId?: string | null; result?: JobResult | null; startedAt?: number },
  ): Promise<JobRow | null>;
  /** Puts an assigned job whose runner refused it back to `queued` (fenced by attempt). */
  requeueJob(jobId: number, attempt: number, now: number): Promise<boolean>;
  /**
   * An assigned job its runner never started (not reported for the heartbeat timeout) goes back
   * to `queued` (fenced by attempt; runner, assignment and token cleared; no retry used), counted;
   * when it went back that way 3 times already it fails instead (endReason
   * `runner_never_started`, finishedAt = now, token cleared): store/unstarted.ts. Returns the
   * job as it now is (`queued` or `failed`), or null when it is no longer `assigned` at `attempt`.
   */
  requeueUnstartedJob(jobId: number, attempt: number, now: number): Promise<JobRow | null>;
  /** The job whose live token has this hash (status assigned or running), or null. */
  findJobByTokenHash(tokenHash: string): Promise<JobRow | null>;
  /**
   * The job paused for budget (`paused`, end reason `budget`) whose token has this hash, or null:
   * its harness gets the gateway's budget refusal rather than a 401. Resume or any end kills it.
   */
  findPausedJobByTokenHash(tokenHash: string): Promise<JobRow | null>;
  /** Jobs in `assigned`, `running` or `cancelling` on this runner, and `paused` ones whose stopped attempt it has not reported gone (they take its capacity). */
  listActiveJobsForRunner(runnerId: number): Promise<JobRow[]>;

  // --- events ----------------------------------------------------------------------------
  /**
   * Stores a runner's events for one attempt, in one transaction. Refused (returns
   * `{ accepted: false }`) when `attempt` is not the job's current attempt. Events whose rseq
   * is already stored for (job, attempt) are skipped (resends); the rest get the next job-wide
   * `seq` numbers in order. Returns the newly stored events and the highest rseq now stored.
   */
  appendRunnerEvents(jobId: number, attempt: number, events: ReadonlyArray<EventBody & { rseq: number; at: string }>): Promise<
    { accepted: false } | { accepted: true; stored: JobEvent[]; upTo: number }
  >;
  /** Stores one server-made event (rseq null) with the next seq. */
  appendServerEvent(jobId: number, body: EventBody, now: number): Promise<JobEvent>;
  /** Events with seq > afterSeq, ascending, at most `limit`. */
  listEvents(jobId: number, afterSeq: number, limit: number): Promise<JobEvent[]>;

  // --- job trees (issue 6; store/job-tree.ts) --------------------------------------------
  /** Every job whose rootId is `rootId` (the root and its descendants), id ascending; [] when none. */
  listTreeJobs(rootId: number): Promise<JobRow[]>;
  /** For these jobs (≤ 1000) that have children: how many live, when the last one ended (store/job-tree.ts childActivity). */
  childActivity(jobIds: readonly number[]): Promise<ChildActivity[]>;
  /** Jobs not ended whose parent has ended, oldest first, at most `limit` (1–1000): job-tree.ts listOrphanedJobs. */
  listOrphanedJobs(limit: number): Promise<OrphanedJob[]>;

  // --- users and sessions (dashboard sign-in, migration 0005) ---------------------------
  /** @throws Error when the name is taken or the role is not admin/member. */
  createUser(u: { name: string; role: 'admin' | 'member'; passwordHash: string | null; now: number }): Promise<UserRow>;
  /** The user with this name and its stored password hash (null: none), or null. */
  findUserCredentials(name: string): Promise<{ user: UserRow; passwordHash: string | null } | null>;
  listUsers(): Promise<UserRow[]>;
  countUsers(): Promise<number>;
  /** Stores a session by the SHA-256 hash of its cookie value. */
  createSession(s: { tokenHash: string; userId: number; expiresAt: number; now: number }): Promise<void>;
  /** The session's user when it exists, has not expired (`expiresAt > now`) and the user is not disabled; else null. */
  findSession(tokenHash: string, now: number): Promise<{ user: UserRow; expiresAt: number } | null>;
  deleteSession(tokenHash: string): Promise<boolean>;
  deleteExpiredSessions(now: number): Promise<number>;
  /** Every API token (no hashes), by id. */
  listApiTokens(): Promise<ApiTokenRow[]>;
  /** Revokes (deletes) an API token; true when it existed. */
  deleteApiToken(id: number): Promise<boolean>;
}

/** A runner registration token as stored (0019), without its hash. Times are epoch ms. */
export interface RegistrationTokenRow {
  id: number;
  labels: Labels;
  createdAt: number;
  expiresAt: number;
  usedAt: number | null;
  revokedAt: number | null;
}

export interface ApiTokenRow {
  id: number;
  name: string;
  role: 'admin' | 'member';
  createdAt: number;
}

export interface RunnerRow {
  id: number;
  name: string;
  labels: Labels;
  capacity: number;
  version: string | null;
  /** True while a WebSocket from the runner is open on some server. */
  connected: boolean;
  /** Set by the liveness sweep; cleared by the next heartbeat. */
  offline: boolean;
  lastHeartbeatAt: number | null;
  createdAt: number;
  /** The current or last dispatch hold (active while `hold.until` > now), or null. */
  hold: RunnerHold | null;
  /** When the runner was revoked (epoch ms), or null. A revoked runner may not connect. */
  revokedAt: number | null;
  /** 0009: labels bound by its registration token (its own labels may only add other keys). */
  boundLabels: Labels;
  /** 0009: effective browser slots (owner setting, else the runner's offer), ≤ capacity. `capacity` is effective too. */
  browserSlots: number;
  /** 0009: the owner's settings (PATCH /api/runners/{id}), null = the runner's own offer counts. */
  ownerCapacity: number | null;
  ownerBrowserSlots: number | null;
}

/** A pause on automatic dispatch to one runner. `until` is epoch ms (server clock). */
export interface RunnerHold {
  until: number;
  reason: string;
  /** `manual` (flotilla hold) or `provisioning` (a new runner finishing its setup). */
  kind: 'manual' | 'provisioning';
}

/** A queued job as the dispatcher sees it. */
export interface QueuedJobRef {
  id: number;
  priority: number;
  selector: Labels;
  /** Only this runner may take it (0004 `pinned_runner_id`), or null. */
  pinnedRunnerId: number | null;
  /** The agent (its `holds` decides what the job takes on a runner) and the workspace it continues, or null. */
  agent: string;
  /** The agent version the job was created with (the dispatcher checks it is loaded before claiming). */
  agentVersion: string;
  workspaceJobId: number | null;
}

/** One live assignment, for fleet views and dispatch capacity. */
export interface ActiveAssignment {
  jobId: number;
  runnerId: number;
  attempt: number;
  /** `paused`: a budget-paused attempt whose process the runner has not reported gone yet (it keeps its slot). */
  status: 'assigned' | 'running' | 'paused';
  /** 0009: what it holds on its runner, and its workspace key (workspaceJobId ?? jobId). */
  holds: JobHolds;
  workspace: number;
}

export interface NewJob {
  parentId: number | null;
  agent: string;
  agentVersion: string;
  input: Record<string, unknown>;
  selector: Labels;
  priority: number;
  budgetMicros: number;
  resumeSessionId?: string | null;
  /** How many times the job goes back to the queue when its runner is lost (agent `retries`); default 0. */
  retries?: number;
  /** Only this runner may claim the job (0004; it holds the workspace a resumed session needs). */
  pinnedRunnerId?: number | null;
  /** The job whose workspace and harness HOME this job continues in (0004; `--resume JOB`). */
  workspaceJobId?: number | null;
  /** Effort tier the run asked for (0004). */
  effortTier?: string | null;
  /**
   * For a child (issue 6): the tree's depth and job-count limits, checked in the same
   * transaction as the insert while the root job's row is locked (PostgreSQL `FOR UPDATE`;
   * SQLite has one writer), so replicas creating children of one tree at once never overshoot.
   * A refusal throws {@link TreeLimitError} and stores nothing.
   */
  treeLimits?: TreeLimits;
  now: number;
}

/** What {@link Store.revokeRunner} returns: the runner, the jobs whose tokens it cleared (`jobs`) and the ones it ended (`stranded`), by id. */
export interface RevokedRunner {
  runner: RunnerRow;
  jobs: JobRow[];
  stranded: JobRow[];
}

/**
 * A job the liveness sweep changed (store sweepStaleRunners); `unstarted`: it was `assigned` and
 * never started: it went back to the queue with no retry used (`queued`), or failed with endReason
 * `runner_never_started` (`failed`: it had gone back that way 3 times already, store/unstarted.ts).
 */
export type SweptJob = JobRow & { unstarted?: true };

export interface JobRow {
  id: number;
  parentId: number | null;
  rootId: number;
  agent: string;
  agentVersion: string;
  input: Record<string, unknown>;
  status: JobStatus;
  endReason: string | null;
  error: string | null;
  priority: number;
  selector: Labels;
  runnerId: number | null;
  attempt: number;
  budgetMicros: number;
  sessionId: string | null;
  resumeSessionId: string | null;
  result: JobResult | null;
  createdAt: number;
  assignedAt: number | null;
  startedAt: number | null;
  finishedAt: number | null;
  /** Retries left if its runner is lost (set by the store on every row it returns; optional for hand-made rows). */
  retriesLeft?: number;
  /** Only this runner may claim the job (0004); absent on hand-made rows = null. */
  pinnedRunnerId?: number | null;
  /** The job whose workspace the job continues in (0004); absent/null = its own. */
  workspaceJobId?: number | null;
  /** Effort tier the run asked for (0004); absent/null = none. */
  effortTier?: string | null;
  /**
   * µ$: the worst case of the model call whose refusal paused the job for budget, as the pause
   * stored it (`jobs.paused_need_micros`, 0024; the figure the resume rule reads,
   * store/budget-resume.ts). Null when the job is not paused for budget or was paused before
   * 0024 (readers then fall back to the pause reason's text: budget-resume.ts
   * pausedNeedMicros); absent on hand-made rows and rows read without the column = null.
   */
  pausedNeedMicros?: number | null;
  /** When a top-up (or the budget sweep) last resumed the job from a budget pause, epoch ms (`jobs.resumed_at`, 0028); absent/null = never. */
  resumedAt?: number | null;
}

/**
 * `Store.listJobs` filters; newest first. `before` is an id cursor (jobs with id < before);
 * `createdFrom`/`createdTo` bound createdAt (epoch ms, from inclusive, to exclusive);
 * `limit` 1..1000.
 */
export interface JobListQuery {
  status?: JobStatus;
  agent?: string;
  runnerId?: number;
  createdFrom?: number;
  createdTo?: number;
  limit: number;
  before?: number;
}

/** A person who signs in to the dashboard (migration 0005). Never carries the password hash. */
export interface UserRow {
  id: number;
  name: string;
  role: 'admin' | 'member';
  disabled: boolean;
  /** True when the user has a password (false: identity-provider sign-in only). */
  hasPassword: boolean;
  /** True when linked to an identity provider (OIDC, a later issue). */
  oidc: boolean;
  createdAt: number;
}

export type * from './tasks-types.js';
export type * from './agent-versions-types.js';
export type * from './effort-tiers-types.js';
export type * from './ledger-types.js';
