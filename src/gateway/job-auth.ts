import type { JobRow, Store } from '../store/types.js';
import { reserve, type BudgetStore } from './budget.js';
import { recordRefused, type CallContext } from './meter.js';
import { jobTokenHash } from './token-hash.js';

/** The Store methods job authentication uses (`findPausedJobByTokenHash` optional: without it a paused job's token is just unknown). */
export type JobAuthStore = Pick<Store, 'findJobByTokenHash'> & Partial<Pick<Store, 'findPausedJobByTokenHash'>>;

/**
 * Who a gateway call's job token belongs to:
 * - `job`: a live job (assigned or running): serve the call;
 * - `pausedForBudget`: a job paused because its tree ran out of budget (issue 3): every call
 *   gets the wire format's budget refusal (not a 401, which a harness reads as a bad key), so
 *   the harness stops the way it did at the first refusal;
 * - `missing` / `unknown`: no token, or one of no live job (ended, cancelled, never issued) → 401.
 */
export type JobAuth = { job: JobRow } | { pausedForBudget: JobRow } | { missing: true } | { unknown: true };

/** Looks `token` up (by its SHA-256 hash): a live job first, then a budget-paused one. */
export async function authenticateJob(store: JobAuthStore, token: string | null): Promise<JobAuth> {
  if (!token) return { missing: true };
  const hash = jobTokenHash(token);
  const job = await store.findJobByTokenHash(hash);
  if (job) return { job };
  const paused = await store.findPausedJobByTokenHash?.(hash);
  return paused ? { pausedForBudget: paused } : { unknown: true };
}

/**
 * The budget refusal's message for a call of a job paused for budget, with the tree's figures
 * as they are now (budget.ts budgetMessage: the budget, spent, reserved, what is left): found
 * by asking for 1 µ$ (what count_tokens asks too). When even that fits — the tree was topped
 * up and the job waits to be resumed with a new token — it is released at once and the message
 * says so.
 */
export async function pausedJobMessage(store: BudgetStore, job: JobRow, now: number): Promise<string> {
  const held = await reserve(store, job, 1, now);
  if ('refused' in held) return held.refused;
  await held.settle(0);
  return `budget exhausted: job ${job.id} is paused for budget (${job.error ?? 'its tree ran out'}); its tree has been topped up since, and the job resumes as a new attempt with a new token`;
}

/**
 * Refuses a call of a job paused for budget, the same on every route: records it as refused
 * (`httpStatus`: the wire format's budget status, reason `budget`; `ctx` made before the body
 * was read) and logs it. Returns the message for the wire format's budget error ({@link pausedJobMessage}).
 */
export async function refusePausedCall(store: BudgetStore, ctx: CallContext, httpStatus: number): Promise<string> {
  const message = await pausedJobMessage(store, ctx.job, ctx.startedAt);
  await recordRefused(ctx, httpStatus, 'budget');
  ctx.log.info('gateway: refused a call of a job paused for budget', { job: ctx.job.id, root: ctx.job.rootId });
  return message;
}
