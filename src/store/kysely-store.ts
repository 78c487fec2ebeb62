import type { Kysely } from 'kysely';
import { codecFor } from './codec.js';
import type { StoreCtx } from './ctx.js';
import type { Database, SqlDialect } from './schema.js';
import type { Store } from './types.js';
import * as tokens from './tokens.js';
import * as runners from './runners.js';
import * as jobs from './jobs.js';
import * as claim from './claim.js';
import * as events from './events.js';
import * as calls from './model-calls.js';

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
    createRunner: (r) => runners.createRunner(c, r),
    findRunnerByCredentialHash: (h) => runners.findRunnerByCredentialHash(c, h),
    getRunner: (id) => runners.getRunner(c, id),
    listRunners: () => runners.listRunners(c),
    touchRunner: (id, now, f) => runners.touchRunner(c, id, now, f),
    setRunnerDisconnected: (id, now) => runners.setRunnerDisconnected(c, id, now),
    sweepStaleRunners: (cutoff, now) => runners.sweepStaleRunners(c, cutoff, now),
    createJob: (j) => jobs.createJob(c, j),
    getJob: (id) => jobs.getJob(c, id),
    listJobs: (q) => jobs.listJobs(c, q),
    claimJob: (r, h, now) => claim.claimJob(c, r, h, now),
    claimJobById: (id, r, h, now) => claim.claimJobById(c, id, r, h, now),
    transitionJob: (id, attempt, from, to, now, f) => jobs.transitionJob(c, id, attempt, from, to, now, f),
    requeueJob: (id, attempt, now) => jobs.requeueJob(c, id, attempt, now),
    findJobByTokenHash: (h) => jobs.findJobByTokenHash(c, h),
    listActiveJobsForRunner: (id) => jobs.listActiveJobsForRunner(c, id),
    appendRunnerEvents: (id, attempt, evs) => events.appendRunnerEvents(c, id, attempt, evs),
    appendServerEvent: (id, body, now) => events.appendServerEvent(c, id, body, now),
    listEvents: (id, after, limit) => events.listEvents(c, id, after, limit),
    recordModelCall: (m) => calls.recordModelCall(c, m),
    jobUsage: (id) => calls.jobUsage(c, id),
  };
}
