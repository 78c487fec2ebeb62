import type { JobRow, Store } from '../store/types.js';
import { formatMicros } from '../core/money.js';
import { DEFAULT_MAX_OUTPUT_TOKENS, reserve, worstCaseMicros, type BudgetStore } from './budget.js';
import { priceFor } from './prices.js';
import { recordRefused, type CallContext } from './meter.js';
import { refusedProvider, requestNamedIn, UNKNOWN_MODEL } from './refused-model.js';
import type { ModelDirectory } from './model-directory.js';
import type { ProviderName } from './config.js';
import { jobTokenHash } from './token-hash.js';
import { refusedCallMicros, withHolds } from '../store/budget-resume.js';

/** What a refusal of a paused job's call reads of the gateway's routes and prices. */
export type RefusalDirectory = Pick<ModelDirectory, 'providerFor' | 'defaultProvider' | 'prices'>;

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
 * The budget refusal's message for a call of a job paused for budget. Always says that the job
 * is paused for budget (its pause reason: the refusal that paused it, with the figures then) and
 * that it resumes as a new attempt with a new token, this token staying refused. Whether its
 * budget has room now is found by reserving the worst case of the call that paused it (the
 * figure the resume rule reads: `job.pausedNeedMicros`, else its pause reason's, store/budget-resume.ts;
 * else `roomFor` µ$, a call like this one, {@link roomForCall}), released at once — not this
 * call's, which may be far cheaper (a fresh user's cheap-model request was told "room").
 * - no room: that call's worst case, what is left now, and that the job resumes after a top-up,
 *   of at least the shortfall when spending (with the room jobs resumed before it hold until
 *   their first call, `store.budgetResumeHolds`) keeps it out (calls in flight do not count
 *   against a resume);
 * - room: says so.
 */
export async function pausedJobMessage(store: BudgetStore & Partial<Pick<Store, 'budgetResumeHolds'>>, job: JobRow, now: number, roomFor: number): Promise<string> {
  const need = job.pausedNeedMicros ?? refusedCallMicros(job.error) ?? Math.max(1, Math.ceil(roomFor));
  // What jobs resumed before it hold until their first call is held on the budgets' rows and
  // counted by the reservation (store/budget-holds.ts); the jobs paused before it, which the
  // resume rule takes first (store/budget-resume.ts holdsAhead), are not: they are added to the
  // room looked for (the most on one budget of its path). The job's own hold (a granted resume
  // waiting for its process) does not count against it.
  const holds = store.budgetResumeHolds ? await store.budgetResumeHolds(job.rootId, job.id) : new Map<string, number>();
  const pausedAhead = store.budgetResumeHolds ? await store.budgetResumeHolds(job.rootId, job.id, true) : new Map<string, number>();
  const ahead = pausedAhead.size ? Math.max(...pausedAhead.values()) : 0;
  const held = await reserve(store, { ...job, pausedNeedMicros: job.pausedNeedMicros ?? 0 }, need + ahead, now);
  // the pause's own refusal (job.error) is not quoted: its figures and top-up advice are the
  // ones of then, and this message gives today's (a fresh tester read two "may cost up to")
  const paused = `budget exhausted: job ${job.id} is paused for budget`;
  if ('refused' in held) {
    const b = held.budget;
    if (!b) return `${paused}; the job resumes after a top-up (flotilla budget ${job.id} --add <USD>), as a new attempt with a new token`;
    const [bh] = withHolds([b], holds);
    const short = need - (bh!.limitMicros - bh!.spentMicros);
    const topUp = short > 0 ? `a top-up of at least ${formatMicros(short)}` : 'a top-up';
    const which = b.jobId !== undefined ? `job ${b.jobId}'s budget (a sub-limit in job tree ${job.rootId})` : `job tree ${job.rootId}'s budget`;
    // calls in flight are not counted against a resume (they settle at what they use): named, or
    // "left now" and the top-up did not add up (fresh tester: $2.005514, $0.399944 left, top-up $1.005514)
    const inFlight = b.reservedMicros > 0 ? ` and ${formatMicros(b.reservedMicros)} reserved by calls in flight (not counted against a resume: they settle at what they use)` : '';
    return `${paused}; the call that paused it, sent again on resuming (with room for the larger request a resumed harness sends), may cost up to ${formatMicros(need)} and ${which} has ${formatMicros(b.remainingMicros)} left now${inFlight}: the job resumes after ${topUp} (flotilla budget ${b.jobId ?? job.rootId} --add <USD>), as a new attempt with a new token`;
  }
  await held.settle(0);
  return `${paused}; its budget now covers the call that paused it (up to ${formatMicros(need)}), but this token stays refused: the job resumes as a new attempt with a new token`;
}

/**
 * The worst case (µ$) of a call like the one refused, as known before its body was parsed: its
 * size in bytes, the default output limit ({@link DEFAULT_MAX_OUTPUT_TOKENS}) and the price of
 * `ctx.requestModel` (the table's default for `unknown`).
 */
export function roomForCall(ctx: CallContext): number {
  return worstCaseMicros(ctx.requestBytes, ctx.maxOutputTokens ?? DEFAULT_MAX_OUTPUT_TOKENS, priceFor(ctx.prices, ctx.requestModel));
}

/**
 * Refuses a call of a job paused for budget, the same on every route: records it as refused
 * (`httpStatus`: the wire format's budget status, reason `budget`; `ctx` made before the body
 * was parsed) and logs it. The row's model: the one the request `body` names when it names a
 * valid one (best effort, as for the other refusals: refused-model.ts requestNamedIn, which also says whether it streams; a body
 * that is not JSON, cut at the size limit or still encoded gives `unknown`), unless `ctx`
 * already names one; its price also sizes the room looked for ({@link roomForCall}).
 * `directory` (the gateway's routes and prices, and the wire format's own provider): the row's
 * provider is the one the model's route names (`fallback` when none matches), priced at the
 * prices in effect.
 * Returns the message for the wire format's budget error ({@link pausedJobMessage}).
 */
export async function refusePausedCall(store: BudgetStore & Partial<Pick<Store, 'budgetResumeHolds'>>, ctx: CallContext, httpStatus: number, body: Buffer | undefined, directory: { routes: RefusalDirectory; fallback: ProviderName }): Promise<string> {
  if (body !== undefined && ctx.requestModel === UNKNOWN_MODEL) {
    const named = requestNamedIn(body.toString('utf8'));
    ctx.requestModel = named.model;
    ctx.streamed = named.streamed;
  }
  // the row names the provider the model's route names, as every other refusal's does
  // (refused-model.ts; a paused job's OpenAI-format calls were recorded against the format's
  // default upstream: a fresh tester), and the room is priced as calls are
  ctx.provider = await refusedProvider(directory.routes, ctx.requestModel, directory.fallback);
  ctx.prices = await directory.routes.prices();
  const message = await pausedJobMessage(store, ctx.job, ctx.startedAt, roomForCall(ctx));
  await recordRefused(ctx, httpStatus, 'budget');
  ctx.log.info('gateway: refused a call of a job paused for budget', { job: ctx.job.id, root: ctx.job.rootId });
  return message;
}

/**
 * Refuses a call that waited for budget room (budget-wait.ts) while its job was paused for
 * budget, by a sibling call that did not fit or through another replica: as a call of a paused
 * job ({@link refusePausedCall}), recorded as refused (`httpStatus`: the wire format's budget
 * status, reason `budget`) under the call's own model and attempt (`ctx`, parsed), its text
 * {@link pausedJobMessage} of `paused` (the job as the store has it now: its need, its pause).
 * `worstMicros`: this call's worst case, the room looked for when the pause has no need.
 * Returns the message for the wire format's budget error.
 */
export async function refusePausedWhileWaiting(store: BudgetStore & Partial<Pick<Store, 'budgetResumeHolds'>>, ctx: CallContext, paused: JobRow, httpStatus: number, worstMicros: number): Promise<string> {
  const message = await pausedJobMessage(store, paused, Date.now(), worstMicros);
  await recordRefused(ctx, httpStatus, 'budget');
  ctx.log.info('gateway: refused a call that waited for budget room: its job was paused for budget meanwhile', { job: ctx.job.id, root: ctx.job.rootId });
  return message;
}
