import type { JobStatus, JobResult, JobUsage, Labels, EventBody, JobEvent } from '../protocol/index.js';

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
export interface Store {
  /** `sqlite` or `postgres`. */
  readonly dialect: 'sqlite' | 'postgres';
  close(): Promise<void>;

  // --- API tokens (users of the HTTP API) -------------------------------------------------
  createApiToken(t: { name: string; role: 'admin' | 'member'; tokenHash: string; now: number }): Promise<ApiTokenRow>;
  findApiTokenByHash(tokenHash: string): Promise<ApiTokenRow | null>;
  countApiTokens(): Promise<number>;

  // --- runner registration ---------------------------------------------------------------
  createRegistrationToken(t: { tokenHash: string; labels: Labels; expiresAt: number; now: number }): Promise<void>;
  /**
   * Uses a registration token: returns its labels and marks it used, in one step, only if it
   * exists, is unused and `expiresAt > now`. A second call with the same hash returns null.
   */
  consumeRegistrationToken(tokenHash: string, now: number): Promise<{ labels: Labels } | null>;
  createRunner(r: { name: string; labels: Labels; capacity: number; credentialHash: string; now: number }): Promise<RunnerRow>;
  findRunnerByCredentialHash(credentialHash: string): Promise<RunnerRow | null>;
  getRunner(id: number): Promise<RunnerRow | null>;
  listRunners(): Promise<RunnerRow[]>;
  /** Records a (re)connect or heartbeat: sets connected, last heartbeat = now, and any given fields. */
  touchRunner(id: number, now: number, fields?: { labels?: Labels; capacity?: number; version?: string; name?: string }): Promise<void>;
  /** Marks the runner disconnected (its WebSocket closed). Does not touch its jobs. */
  setRunnerDisconnected(id: number, now: number): Promise<void>;
  /**
   * Liveness sweep: every runner whose last heartbeat is older than `cutoff` and is not yet
   * offline becomes offline, and each of its jobs in `assigned`/`running` becomes `lost`
   * (endReason `runner_lost`, finishedAt = now, token cleared). Returns the jobs it marked lost.
   */
  sweepStaleRunners(cutoff: number, now: number): Promise<JobRow[]>;

  // --- jobs ------------------------------------------------------------------------------
  /** Inserts a queued job (root when `parentId` is null: rootId = its own id). */
  createJob(j: NewJob): Promise<JobRow>;
  getJob(id: number): Promise<JobRow | null>;
  /** Newest first; `before` is an id cursor (jobs with id < before). */
  listJobs(q: { status?: JobStatus; agent?: string; limit: number; before?: number }): Promise<JobRow[]>;
  /**
   * Dispatch: atomically takes the highest-priority, oldest queued job whose selector is a
   * subset of `runner.labels`, and assigns it to the runner: status `assigned`, attempt + 1,
   * runnerId, assignedAt = now, tokenHash. Safe under concurrency: two callers never get the
   * same job (SQLite: one writer; PostgreSQL: `FOR UPDATE SKIP LOCKED`). Null when none match.
   */
  claimJob(runner: { id: number; labels: Labels }, tokenHash: string, now: number): Promise<JobRow | null>;
  /** Like claimJob but for one given job id (still only if queued). */
  claimJobById(jobId: number, runner: { id: number; labels: Labels }, tokenHash: string, now: number): Promise<JobRow | null>;
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
  /** The job whose live token has this hash (status assigned or running), or null. */
  findJobByTokenHash(tokenHash: string): Promise<JobRow | null>;
  /** Jobs in `assigned` or `running` on this runner. */
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

  // --- model calls (the gateway's ledger) ------------------------------------------------
  recordModelCall(c: NewModelCall): Promise<void>;
  /** Sums over the job's model calls. */
  jobUsage(jobId: number): Promise<JobUsage>;
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
  now: number;
}

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
}

export interface NewModelCall {
  jobId: number;
  attempt: number;
  /** `anthropic`, `scripted`, ... */
  provider: string;
  model: string;
  /** `anthropic-messages` for now. */
  api: string;
  streamed: boolean;
  /** Upstream HTTP status (0 when the upstream could not be reached). */
  httpStatus: number;
  inputTokens: number;
  outputTokens: number;
  cacheReadTokens: number;
  cacheWriteTokens: number;
  /** False when the usage could not be read and the tokens/cost are an estimate. */
  usageKnown: boolean;
  costMicros: number;
  startedAt: number;
  durationMs: number;
}
