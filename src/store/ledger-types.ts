import type { JobUsage, LongContextPrice } from '../protocol/index.js';
import type { JobRow } from './types.js';
import type { BudgetRaised } from './budget-resume.js';

/**
 * The gateway's part of the Store (issue 3): the ledger of model calls, the budgets per job tree
 * (and per child job, issue 6) with their reservations, and the model routes and price
 * overrides set through the API. Conventions as the Store's (store/types.ts): epoch ms, integer
 * micro-dollars, one transaction per method that changes more than one row.
 */
export interface LedgerStore {
  // --- model calls (the gateway's ledger) ------------------------------------------------
  recordModelCall(c: NewModelCall): Promise<void>;
  /**
   * Notes a model call of (jobId, attempt) starting or ending at `now` (epoch ms): the calls
   * in flight and the last activity time the idle limit reads (store/model-activity.ts).
   */
  noteModelCall(jobId: number, attempt: number, phase: 'start' | 'end', now: number): Promise<void>;
  /** Model-call activity of these attempts (those with no call are left out); ≤ 1000 pairs. */
  modelCallActivity(attempts: readonly { jobId: number; attempt: number }[]): Promise<ModelCallActivity[]>;
  /** Sums over the job's model calls. */
  jobUsage(jobId: number): Promise<JobUsage>;
  /** Ledger sums grouped per job, tree, agent, runner or UTC day, for calls started in [since, until) (store/costs.ts). */
  costRollup(q: { by: CostGroup; since: number; until?: number; rootId?: number }): Promise<CostRollupRow[]>;

  // --- budgets per job tree (issue 3; store/budgets.ts) ----------------------------------
  /** The tree's budget (row created from the root job's budgetMicros if missing); null when not a root job. */
  getTreeBudget(rootId: number, now: number): Promise<TreeBudget | null>;
  /**
   * Atomically reserves `worstMicros` when `spent + reserved + held + worst <= limit` (one
   * conditional UPDATE plus the reservation row, one transaction; holds across processes), held
   * until `now + ttlMs` (default 2 min) at the latest. `ok: false` leaves it unchanged. Null
   * when not a root job. `jobId`: a child job (its sub-limits reserve too). `call` (H7) is kept
   * on the reservation row: the ledger row the sweep writes if the call is never settled.
   * `holder`: the calling job when it may hold room from a resume (its row's
   * `pausedNeedMicros` is set): its own hold does not count against it (store/budget-holds.ts).
   */
  reserveBudget(rootId: number, worstMicros: number, now: number, ttlMs?: number, jobId?: number, call?: PendingCall, holder?: number): Promise<BudgetReservationResult | null>;
  /**
   * Issue 6: job `jobId`'s own sub-limit budget (`jobId` set), created from its budgetMicros
   * if missing; null when the job has no sub-limit (a root, or a child sharing the tree's).
   * store/job-budgets.ts.
   */
  getJobBudget(jobId: number, now: number): Promise<TreeBudget | null>;
  /**
   * Issue 6: raises child `jobId`'s sub-limit by `addMicros`, never past what its tree (and
   * each sub-limited ancestor) has left: `{ ok: false, maxAddMicros }` then, nothing changed.
   * Null when the job has no sub-limit.
   */
  topUpJobBudget(jobId: number, addMicros: number, now: number): Promise<{ ok: true; budget: TreeBudget } | { ok: false; maxAddMicros: number } | null>;
  /**
   * Settles reservation `reservationId` of tree `rootId`: releases it (unless the sweeper
   * already did) and charges `costMicros` (0 for a failed call); with `call`, appends that
   * ledger row in the same transaction. When the sweeper had charged it (H7), that charge and
   * its ledger row are replaced by these. False when the reservation was no longer held (the
   * cost is charged all the same).
   */
  settleBudget(rootId: number, reservationId: number, costMicros: number, now: number, call?: NewModelCall): Promise<boolean>;
  /**
   * H7: every reservation whose expiry is <= now (its gateway died mid-call, and the upstream
   * probably billed the call) is released AND charged its micros (the worst case), with a
   * ledger row marked usage unknown for its call; a settle that still comes later replaces that
   * charge and row with the real ones (budgets.ts). Returns per tree µ$ released and charged.
   */
  releaseExpiredReservations(now: number): Promise<ExpiredReservations[]>;
  /** Moves a reservation's expiry to `expiresAt` (epoch ms) while its call runs; false when it is gone (settled or released). */
  extendBudgetReservation(reservationId: number, expiresAt: number): Promise<boolean>;

  // --- model routes and price overrides (issue 3; store/model-routes.ts) -----------------
  /** Every model route set through the API, pattern ascending. */
  listModelRoutes(): Promise<ModelRouteRow[]>;
  /** Creates or replaces the route of `pattern`. @throws Error naming a bad pattern or provider. */
  setModelRoute(pattern: string, provider: string, now: number): Promise<ModelRouteRow>;
  /** Deletes the route of `pattern`; false when there was none. */
  deleteModelRoute(pattern: string): Promise<boolean>;
  /** Every price override, model ascending. */
  listModelPrices(): Promise<ModelPriceRow[]>;
  /** Creates or replaces the price override of `model`. @throws Error naming a bad field. */
  setModelPrice(model: string, price: ModelPriceRow['price'], now: number): Promise<ModelPriceRow>;
  /** Deletes the price override of `model`; false when there was none. */
  deleteModelPrice(model: string): Promise<boolean>;
  /** Raises the tree's limit by `addMicros` (and the root job's budgetMicros); with `capMicros`, only to at most that (store/budgets.ts BudgetCapError otherwise). Null when not a root job. */
  topUpBudget(rootId: number, addMicros: number, now: number, capMicros?: number): Promise<TreeBudget | null>;
  /** assigned/running attempt → `paused` (endReason `budget`, `error` = reason, token cleared; `needMicros` µ$ the refused call's worst case, else read from reason; `needCall` what it was worked out from: store/budgets.ts), fenced by attempt. */
  pauseJobForBudget(jobId: number, attempt: number, reason: string, now: number, needMicros?: number, needCall?: NeedCall): Promise<JobRow | null>;
  /**
   * The jobs of tree `rootId` whose stored need has what it was worked out from (a budget
   * pause's {@link NeedCall}), while that need counts (paused, queued, assigned or running):
   * id, need µ$ and call (store/budget-needs.ts listPricedNeeds).
   */
  listPricedNeeds(rootId: number): Promise<{ jobId: number; needMicros: number; call: NeedCall }[]>;
  /**
   * Sets job `jobId`'s stored need to `needMicros` (priced again: server/budget-reprice.ts) and
   * writes its tree's held room again, one transaction; false when it has no need stored.
   */
  setPausedNeed(jobId: number, needMicros: number): Promise<boolean>;
  /**
   * The budget-paused jobs of the tree that may resume now that `raised` (the tree's budget, or
   * child `{ jobId }`'s sub-limit) was raised: it is on their path and every budget on their
   * path has room for their refused call (store/budget-resume.ts, the one rule). Ids ascending.
   */
  listResumableBudgetPausedJobs(rootId: number, raised: BudgetRaised, knownNeedOnly?: boolean): Promise<number[]>;
  /** The jobs of the tree paused for budget (endReason `budget`), ids ascending (store/budget-resume.ts). */
  listBudgetPausedJobs(rootId: number): Promise<number[]>;
  /**
   * µ$ that stands before paused job `jobId` in the tree's budgets (key `tree`, or a sub-limited
   * job's id as text): held by resumed jobs that have not called yet, by resumes waiting for their
   * process to exit, and by jobs paused for budget with a lower id (store/budget-resume.ts
   * holdsAhead: the resume rule takes them first). With `pausedOnly`, the last alone: what the
   * budgets' `heldMicros` does not count already.
   */
  budgetResumeHolds(rootId: number, jobId: number, pausedOnly?: boolean): Promise<Map<string, number>>;
  /** Ends the hold of resumed job `jobId` after its first call (store/budget-resume.ts endBudgetResumeHold): its root id, or null when it held none. */
  endBudgetResumeHold(jobId: number): Promise<number | null>;
  /**
   * Writes the room tree `rootId`'s budgets hold for resumed jobs again from the jobs
   * (store/budget-holds.ts syncTreeHolds): after a holder ended some way that did not write
   * it (failed, cancelled, lost before its call). Writes only when the rows hold the wrong
   * amount: true then.
   */
  syncBudgetHolds(rootId: number): Promise<boolean>;
  /**
   * Lets lapse the holds of tree `rootId`'s resumed jobs still queued (not started) that were
   * resumed at or before `resumedBefore` (ms): their needs cleared, the held room written again
   * (store/budget-holds.ts lapseBudgetHolds). Returns their ids, ascending.
   */
  lapseBudgetHolds(rootId: number, resumedBefore: number): Promise<number[]>;
  /**
   * The trees whose budgets wait on something: a budget row holding room for a resumed job, or
   * a job paused for budget (store/budget-holds.ts listBudgetWaitingTrees). Root ids above
   * `after` (default 0), ascending, at most `limit`.
   */
  listBudgetWaitingTrees(limit: number, after?: number): Promise<number[]>;
  /**
   * The jobs of tree `rootId` holding budget room (store/budget-holds.ts listHolders: resumed and
   * not called yet, or a granted resume waiting for its exit), ascending id, each with its
   * status, the room it holds on every budget of its path, µ$, and when a top-up last resumed it
   * (epoch ms, null before 0028).
   */
  listBudgetHolders(rootId: number): Promise<{ jobId: number; status: string; heldMicros: number; resumedAt: number | null }[]>;
  /** Budget-paused jobs of the tree (only `jobIds` when given) → `queued` with resumeSessionId = their sessionId. Returns them. */
  resumeBudgetPausedJobs(rootId: number, now: number, jobIds?: readonly number[]): Promise<JobRow[]>;
  /**
   * Budget-paused jobs of the tree whose stopped attempt still holds its runner (process not
   * reported gone) → endReason `budget_resume`: they resume when it is (endPausedAttempt).
   * Only `jobIds` when given. Call before resumeBudgetPausedJobs. Returns them. See budgets.ts.
   */
  deferHeldBudgetResumes(rootId: number, jobIds?: readonly number[]): Promise<JobRow[]>;
  /**
   * A paused job's attempt ended on its runner: finishedAt = now (its slot is free); requeued
   * at once when endReason is `budget_resume`; `sessionId` (the attempt's final report's) kept
   * as the job's session. Fenced by attempt; null when not paused-and-held.
   */
  endPausedAttempt(jobId: number, attempt: number, now: number, sessionId?: string): Promise<JobRow | null>;
  /** Sums per job for many jobs at once (every id present; zeros without calls). One grouped query per 500 ids. */
  jobUsageMany(jobIds: readonly number[]): Promise<Map<number, JobUsage>>;
}

/** Model calls of one job attempt, as the gateway noted them (migration 0010). */
export interface ModelCallActivity {
  jobId: number;
  attempt: number;
  /** Calls in flight now. */
  inFlight: number;
  /** Epoch ms (server clock) a call last started or ended. */
  lastAt: number;
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
  /** Server-side web searches charged in costMicros (H4, migration 0020); default 0. */
  webSearchRequests?: number;
  costMicros: number;
  startedAt: number;
  durationMs: number;
  /** Exact cost in nano-dollars (default costMicros × 1000). */
  costNanos?: number;
  /** The runner running the job at call time (rollups per runner). */
  runnerId?: number | null;
  /** Why the gateway refused the call without asking the upstream (`budget`, `invalid_request`, ...); absent = forwarded. */
  refused?: string | null;
}

/**
 * What a reservation keeps of its call (H7): the ledger row the sweep writes, usage unknown,
 * when the call is never settled (its gateway died). Tokens are the worst case's: the input
 * estimate the reservation priced and the output bound; `webSearchRequests` the searches
 * reserved for. Stored as JSON on the reservation row (migration 0020).
 */
export type PendingCall = Pick<NewModelCall, 'jobId' | 'attempt' | 'provider' | 'model' | 'api' | 'streamed' | 'runnerId' | 'inputTokens' | 'outputTokens' | 'webSearchRequests'>;

/** One tree's part of a reservation sweep: µ$ given back to `reserved`, µ$ charged to `spent` (H7: the same), reservations swept. */
export interface ExpiredReservations {
  rootId: number;
  releasedMicros: number;
  chargedMicros: number;
  count: number;
}

/** What {@link Store.reserveBudget} returns: the budget after (ok) or as it stands (refused), and the reservation's id when ok. */
export type BudgetReservationResult = { ok: true; budget: TreeBudget; reservationId: number } | { ok: false; budget: TreeBudget };

/** A model route: model name `pattern` (exact, or a glob with `*`; `*` alone = the default) → provider. updatedAt epoch ms. */
export interface ModelRouteRow {
  pattern: string;
  provider: string;
  updatedAt: number;
}

/**
 * A price override for `model`: USD per million tokens per token category; optional
 * `webSearch` (USD per 1,000 web searches), `maxOutput` (the model's maximum output, tokens) and
 * `longContext` (long-context rates, or null: priced flat). Stored as given: an absent
 * `maxOutput` / `longContext` is not the same as one set (protocol/model-routes.ts ModelPrice
 * says what the gateway makes of each). updatedAt epoch ms.
 */
export interface ModelPriceRow {
  model: string;
  price: { input: number; output: number; cacheWrite5m: number; cacheWrite1h: number; cacheRead: number; webSearch?: number; maxOutput?: number; longContext?: LongContextPrice | null };
  updatedAt: number;
}

/**
 * The call a budget pause's need was worked out from (gateway/worst-case.ts callWorstCase): its
 * model, the worst case's input-side and output tokens (the input grown for a resumed harness's
 * larger request), the web searches it may be charged and its other tools' fixed fees, µ$. Kept
 * with the pause (jobs.paused_need_call, 0027) so the need is priced again when prices change.
 */
export interface NeedCall {
  model: string;
  inputTokens: number;
  outputTokens: number;
  webSearches?: number;
  toolFeeMicros?: number;
}

/** A job tree's budget, micro-dollars. remaining = max(0, limit − spent − reserved − held). */
export interface TreeBudget {
  rootId: number;
  /** Issue 6: set when these are the figures of this child job's sub-limit, not the tree's. */
  jobId?: number;
  limitMicros: number;
  spentMicros: number;
  reservedMicros: number;
  /**
   * Room held for the calls of jobs a top-up resumed that have not made them yet (0027,
   * store/budget-holds.ts), less the calling job's own hold in a reservation's figures; absent
   * when 0.
   */
  heldMicros?: number;
  remainingMicros: number;
}

/** How {@link Store.costRollup} groups. */
export type CostGroup = 'job' | 'tree' | 'agent' | 'runner' | 'day' | 'task';

/** One group of the cost rollup. Tokens in tokens, money in µ$ (costMicros: sum of rounded per-call costs) and nano-dollars (exact). */
export interface CostRollupRow {
  key: string;
  calls: number;
  refusedCalls: number;
  estimatedCalls: number;
  inputTokens: number;
  outputTokens: number;
  cacheReadTokens: number;
  cacheWriteTokens: number;
  costMicros: number;
  /** The exact sum, n$; absent past Number.MAX_SAFE_INTEGER (about $9.007M), which a JS number cannot hold exactly. */
  costNanos?: number;
}
