import type { Kysely } from 'kysely';
import { codecFor } from './codec.js';
import type { StoreCtx } from './ctx.js';
import type { Database, SqlDialect } from './schema.js';
import type { Store } from './types.js';
import * as tokens from './tokens.js';
import * as runners from './runners.js';
import * as runnerCapacity from './runner-capacity.js';
import * as runnerInstance from './runner-instance.js';
import * as runnerNames from './runner-names.js';
import * as jobs from './jobs.js';
import * as claim from './claim.js';
import * as unstarted from './unstarted.js';
import * as events from './events.js';
import * as calls from './model-calls.js';
import * as modelActivity from './model-activity.js';
import * as agentVersions from './agent-versions.js';
import * as effortTiers from './effort-tiers.js';
import * as budgets from './budgets.js';
import * as budgetPause from './budget-pause.js';
import * as budgetResume from './budget-resume.js';
import * as budgetHolds from './budget-holds.js';
import * as budgetNeeds from './budget-needs.js';
import * as expiredReservations from './expired-reservations.js';
import * as jobBudgets from './job-budgets.js';
import * as modelRoutes from './model-routes.js';
import * as costs from './costs.js';
import * as users from './users.js';
import { taskMethods } from './tasks-methods.js';
import { dashboardMethods } from './dashboard-methods.js';
import { dispatchMethods } from './dispatch-methods.js';
import { jobUsageMany } from './usage-batch.js';
import { childActivity, listOrphanedJobs, listTreeJobs } from './job-tree.js';

/**
 * The {@link Store} over a migrated Kysely database of either engine. Each method delegates
 * to the repository module for its concern; `afterClose` runs once after the Kysely handle
 * (and its driver) is destroyed (e.g. to release the data-folder lock).
 */
export function kyselyStore(db: Kysely<Database>, dialect: SqlDialect, afterClose: () => void | Promise<void> = () => {}): Store {
  const c: StoreCtx = { db, dialect, codec: codecFor(dialect) };
  let closed: Promise<void> | null = null;
  return {
    dialect,
    close: () =>
      (closed ??= (async () => {
        try {
          await db.destroy();
        } finally {
          await afterClose();
        }
      })()),
    createApiToken: (t) => tokens.createApiToken(c, t),
    findApiTokenByHash: (h) => tokens.findApiTokenByHash(c, h),
    countApiTokens: () => tokens.countApiTokens(c),
    createRegistrationToken: (t) => tokens.createRegistrationToken(c, t),
    consumeRegistrationToken: (h, now) => tokens.consumeRegistrationToken(c, h, now),
    listRegistrationTokens: (q) => tokens.listRegistrationTokens(c, q),
    revokeRegistrationToken: (id, now) => tokens.revokeRegistrationToken(c, id, now),
    createRunner: (r) => runners.createRunner(c, r),
    findRunnerByCredentialHash: (h) => runners.findRunnerByCredentialHash(c, h),
    getRunner: (id) => runners.getRunner(c, id),
    listRunners: () => runners.listRunners(c),
    touchRunner: (id, now, f) => runners.touchRunner(c, id, now, f),
    registerRunner: (r) => runnerNames.registerRunner(c, r),
    renameRunner: (id, name) => runnerNames.renameRunner(c, id, name),
    claimRunnerInstance: (id, r) => runnerInstance.claimRunnerInstance(c, id, r),
    releaseRunnerInstance: (id, conn) => runnerInstance.releaseRunnerInstance(c, id, conn),
    setRunnerCapacity: (id, set) => runnerCapacity.setRunnerCapacity(c, id, set),
    setRunnerDisconnected: (id, now) => runners.setRunnerDisconnected(c, id, now),
    sweepStaleRunners: (cutoff, now) => runners.sweepStaleRunners(c, cutoff, now),
    retryLostJob: (id, attempt, now) => runners.retryLostJob(c, id, attempt, now),
    setRunnerHold: (id, hold) => runners.setRunnerHold(c, id, hold),
    listHeldRunnerIds: (now) => runners.listHeldRunnerIds(c, now),
    revokeRunner: (id, now) => runners.revokeRunner(c, id, now),
    listActiveAssignments: () => runners.listActiveAssignments(c),
    countQueuedJobs: () => runners.countQueuedJobs(c),
    listQueuedForDispatch: (limit, after) => runners.listQueuedForDispatch(c, limit, after),
    listRecentJobsForRunner: (id, limit) => runners.listRecentJobsForRunner(c, id, limit),
    createJob: (j) => jobs.createJob(c, j),
    getJob: (id) => jobs.getJob(c, id),
    listJobs: (q) => jobs.listJobs(c, q),
    claimJob: (r, h, now) => claim.claimJob(c, r, h, now),
    claimJobById: (id, r, h, now, holds) => claim.claimJobById(c, id, r, h, now, holds),
    transitionJob: (id, attempt, from, to, now, f) => jobs.transitionJob(c, id, attempt, from, to, now, f),
    requeueJob: (id, attempt, now) => jobs.requeueJob(c, id, attempt, now),
    requeueUnstartedJob: (id, attempt, now) => unstarted.requeueUnstartedJob(c, id, attempt, now),
    findJobByTokenHash: (h) => jobs.findJobByTokenHash(c, h),
    findPausedJobByTokenHash: (h) => jobs.findPausedJobByTokenHash(c, h),
    listActiveJobsForRunner: (id) => jobs.listActiveJobsForRunner(c, id),
    appendRunnerEvents: (id, attempt, evs) => events.appendRunnerEvents(c, id, attempt, evs),
    appendServerEvent: (id, body, now) => events.appendServerEvent(c, id, body, now),
    listEvents: (id, after, limit) => events.listEvents(c, id, after, limit),
    recordModelCall: (m) => calls.recordModelCall(c, m),
    noteModelCall: (id, attempt, phase, now) => modelActivity.noteModelCall(c, id, attempt, phase, now),
    modelCallActivity: (attempts) => modelActivity.modelCallActivity(c, attempts),
    installAgentVersions: (from, agents, now) => agentVersions.installAgentVersions(c, from, agents, now),
    listAgentVersions: (name) => agentVersions.listAgentVersions(c, name),
    listEffortTiers: () => effortTiers.listEffortTiers(c),
    setEffortTier: (n, m, l, now) => effortTiers.setEffortTier(c, n, m, l, now),
    deleteEffortTier: (n) => effortTiers.deleteEffortTier(c, n),
    jobUsage: (id) => calls.jobUsage(c, id),
    costRollup: (q) => costs.costRollup(c, q),
    getTreeBudget: (id, now) => budgets.getTreeBudget(c, id, now),
    reserveBudget: (id, w, now, ttl, jobId, call, holder) => budgets.reserveBudget(c, id, w, now, ttl, jobId, call, holder),
    getJobBudget: (id, now) => jobBudgets.getJobBudget(c, id, now),
    topUpJobBudget: (id, add, now) => jobBudgets.topUpJobBudget(c, id, add, now),
    settleBudget: (id, r, cost, now, call) => budgets.settleBudget(c, id, r, cost, now, call),
    releaseExpiredReservations: (now) => expiredReservations.releaseExpiredReservations(c, now),
    extendBudgetReservation: (id, expiresAt) => budgets.extendBudgetReservation(c, id, expiresAt),
    listModelRoutes: () => modelRoutes.listModelRoutes(c),
    setModelRoute: (p, prov, now) => modelRoutes.setModelRoute(c, p, prov, now),
    deleteModelRoute: (p) => modelRoutes.deleteModelRoute(c, p),
    listModelPrices: () => modelRoutes.listModelPrices(c),
    setModelPrice: (m, price, now) => modelRoutes.setModelPrice(c, m, price, now),
    deleteModelPrice: (m) => modelRoutes.deleteModelPrice(c, m),
    topUpBudget: (id, add, now, cap) => budgets.topUpBudget(c, id, add, now, cap),
    pauseJobForBudget: (id, attempt, reason, now, need, needCall) => budgetPause.pauseJobForBudget(c, id, attempt, reason, now, need, needCall),
    listResumableBudgetPausedJobs: (id, raised, known) => budgetResume.listResumableBudgetPausedJobs(c, id, raised, known),
    listBudgetPausedJobs: (id) => budgetResume.listBudgetPausedJobs(c, id),
    budgetResumeHolds: (id, jobId, pausedOnly) => budgetResume.holdsAhead(c.db, id, jobId, pausedOnly),
    endBudgetResumeHold: (id) => budgetHolds.endBudgetResumeHold(c, id),
    syncBudgetHolds: (rootId) => budgetHolds.syncTreeHolds(c, rootId),
    lapseBudgetHolds: (rootId, before) => budgetHolds.lapseBudgetHolds(c, rootId, before),
    listBudgetWaitingTrees: (limit, after) => budgetHolds.listBudgetWaitingTrees(c, limit, after),
    listBudgetHolders: (rootId) => budgetHolds.listHolders(c.db, { rootId }),
    listPricedNeeds: (rootId) => budgetNeeds.listPricedNeeds(c, rootId),
    setPausedNeed: (jobId, micros) => budgetNeeds.setPausedNeed(c, jobId, micros),
    resumeBudgetPausedJobs: (id, now, ids) => budgetPause.resumeBudgetPausedJobs(c, id, now, ids),
    deferHeldBudgetResumes: (id, ids) => budgetPause.deferHeldBudgetResumes(c, id, ids),
    endPausedAttempt: (id, attempt, now, sessionId) => budgetPause.endPausedAttempt(c, id, attempt, now, sessionId),
    jobUsageMany: (ids) => jobUsageMany(c, ids),
    listTreeJobs: (rootId) => listTreeJobs(c, rootId),
    childActivity: (jobIds) => childActivity(c, jobIds),
    listOrphanedJobs: (limit) => listOrphanedJobs(c, limit),
    createUser: (u) => users.createUser(c, u),
    findUserCredentials: (name) => users.findUserCredentials(c, name),
    listUsers: () => users.listUsers(c),
    countUsers: () => users.countUsers(c),
    createSession: (s) => users.createSession(c, s),
    findSession: (h, now) => users.findSession(c, h, now),
    deleteSession: (h) => users.deleteSession(c, h),
    deleteExpiredSessions: (now) => users.deleteExpiredSessions(c, now),
    listApiTokens: () => users.listApiTokens(c),
    deleteApiToken: (id) => users.deleteApiToken(c, id),
    ...taskMethods(c),
    ...dashboardMethods(c),
    ...dispatchMethods(c),
  };
}
