import { z } from 'zod';
import { JobStatus } from './job.js';
import { UsdAmount } from './usd.js';

/**
 * Budgets and cost rollups (issue 3). Money in integer micro-dollars (µ$, 1e-6 USD) except
 * request amounts, which are USD as people type them.
 */

/**
 * A budget on a job's path as a view names it: the tree's (`jobId` absent) or child job
 * `jobId`'s sub-limit, with its own limit and room (limit − spent − reserved − held, never below 0), µ$.
 */
export const PathBudgetRef = z.object({
  jobId: z.number().int().positive().optional(),
  limitMicros: z.number().int().nonnegative(),
  remainingMicros: z.number().int().nonnegative(),
});
export type PathBudgetRef = z.infer<typeof PathBudgetRef>;

/**
 * A job tree's budget (or a sub-limit's, `jobId` set). remainingMicros = max(0, limit − spent −
 * reserved − held); in `GET/POST /api/jobs/:id/budget` it is the least room on job :id's path (every
 * budget a call of it reserves against), and `boundedBy` names the budget with that least room
 * when it is another than the one shown (absent: the one shown bounds itself).
 */
export const TreeBudget = z.object({
  rootId: z.number().int().positive(),
  /** Issue 6: set when these are child job `jobId`'s sub-limit figures, not the tree's. */
  jobId: z.number().int().positive().optional(),
  limitMicros: z.number().int().nonnegative(),
  spentMicros: z.number().int().nonnegative(),
  /** Worst-case cost of the tree's model calls in flight. */
  reservedMicros: z.number().int().nonnegative(),
  /** Room held for the calls of jobs a top-up resumed that have not made them yet (store/budget-holds.ts; in a job's budget view, not its own); absent when none. */
  heldMicros: z.number().int().positive().optional(),
  remainingMicros: z.number().int().nonnegative(),
  /** The budget on the job's path with the least room when that is not the one shown (a tie: the one nearest the tree). */
  boundedBy: PathBudgetRef.optional(),
});
export type TreeBudget = z.infer<typeof TreeBudget>;

/** `POST /api/jobs/:id/budget` body: add `addUsd` dollars to the job's tree ($0.000001 ≤ addUsd ≤ $100,000). */
export const TopUpRequest = z.object({ addUsd: UsdAmount }).strict();
export type TopUpRequest = z.infer<typeof TopUpRequest>;

/**
 * A budget on a paused job's path short of room for its refused call: the tree's (`jobId`
 * absent) or child `jobId`'s sub-limit; `shortMicros` ≥ 1 µ$ it lacks (need − (limit − spent −
 * what stands before it)); `aheadMicros`, when some of that is the needs of jobs paused for
 * budget before it (lower ids: a top-up resumes them first), how much (≤ shortMicros).
 */
export const BudgetShortfall = z.object({
  jobId: z.number().int().positive().optional(),
  shortMicros: z.number().int().positive(),
  aheadMicros: z.number().int().positive().optional(),
});
export type BudgetShortfall = z.infer<typeof BudgetShortfall>;

/**
 * A job holding room on its tree's budgets: its status and the room it holds on every budget of
 * its path, µ$; `lapsesAt` (ISO 8601), for one still queued, when it gives that room back unless
 * it has started (its resume + the server's FLOTILLA_GATEWAY_BUDGET_HOLD_MS; server/budget-sweep.ts
 * lets it lapse at its next pass, every 10 s).
 */
export const BudgetHolder = z.object({
  jobId: z.number().int().positive(),
  status: JobStatus,
  heldMicros: z.number().int().positive(),
  lapsesAt: z.string().optional(),
});
export type BudgetHolder = z.infer<typeof BudgetHolder>;

/**
 * What would resume a job paused for budget (endReason `budget`), by the server's resume rule
 * (store/budget-resume.ts): `needMicros` the worst case of the call that was refused (null:
 * unknown, 1 µ$ counts), `short` the budgets on its path without room for it (limit − spent <
 * need), the tree's first, then the sub-limits from the top down — top up each, in that order
 * (a sub-limit never grows past the room above it). `short` empty: a top-up of any budget on its
 * path resumes it.
 */
export const ResumeNeeds = z.object({
  needMicros: z.number().int().positive().nullable(),
  short: z.array(BudgetShortfall),
});
export type ResumeNeeds = z.infer<typeof ResumeNeeds>;

/**
 * `GET/POST /api/jobs/:id/budget` response: the budget job `jobId` uses (its own sub-limit, else
 * its nearest sub-limited ancestor's, else its tree's), and (POST) the jobs the top-up resumed.
 */
export const BudgetView = z.object({
  jobId: z.number().int().positive(),
  /** Job `jobId`'s status (after the top-up, on POST): `paused` waits for budget (see `resumeNeeds`). Absent from servers older than it. */
  jobStatus: JobStatus.optional(),
  /**
   * Set when job `jobId` is not its tree's root and the root has ended: the root's status. The
   * tree then spends nothing more and its budget takes no top-up (409 `job_ended`).
   */
  rootStatus: JobStatus.optional(),
  budget: TreeBudget,
  /** The other jobs of the tree paused for budget (ids ascending): each one's own view says what resumes it. */
  pausedJobs: z.array(z.number().int().positive()).default([]),
  /** Ids of jobs that were paused for budget and are queued again (POST only). */
  resumed: z.array(z.number().int().positive()),
  /**
   * POST only: this top-up's own figures, micro-dollars: what it added, and the raised budget's
   * limit right after its own update (`budget` is read later: with another top-up at the same
   * time it holds both). Absent from servers older than it.
   */
  topUp: z.object({ addedMicros: z.number().int().positive(), limitMicros: z.number().int().positive() }).optional(),
  /** Set when job `jobId` is paused for budget (endReason `budget`): what would resume it. */
  resumeNeeds: ResumeNeeds.optional(),
  /**
   * The jobs of the tree holding room for the call a top-up resumed them for (each its own
   * until it makes that call or ends; store/budget-holds.ts), ascending id; absent when none.
   * `budget.heldMicros` counts them all but job `jobId` itself: its own calls may use its room.
   */
  holders: z.array(BudgetHolder).optional(),
  /**
   * Room job `jobId` holds itself for the call a top-up resumed it for (its entry in `holders`),
   * µ$; absent when it holds none. Counted in `budget.remainingMicros` (its own calls may use
   * it), so the tree's other jobs on its path have `remainingMicros − ownHeldMicros` of it (never
   * below 0). Absent from servers older than it.
   */
  ownHeldMicros: z.number().int().positive().optional(),
});
export type BudgetView = z.infer<typeof BudgetView>;

/** How `GET /api/costs` groups. */
export const CostGroup = z.enum(['job', 'tree', 'agent', 'runner', 'day', 'task']);
export type CostGroup = z.infer<typeof CostGroup>;

/** One group of a cost rollup. costNanos is the exact sum in nano-dollars (costMicros sums rounded per-call costs). */
export const CostRow = z.object({
  key: z.string(),
  /** `by=runner`: the runner's name (absent for key `none`, or a runner no longer in the store); `by=task`: the task's title, else its first key, else its agent. `key` stays the id. */
  name: z.string().optional(),
  /** The group's ledger rows: the calls made AND the ones the gateway refused (`refusedCalls`); calls made = calls - refusedCalls (what `jobs show` counts). */
  calls: z.number().int().nonnegative(),
  /** Calls the gateway refused without asking the upstream (budget, bad request, unknown model, ...): $0 each. */
  refusedCalls: z.number().int().nonnegative(),
  /** Calls charged an estimate (usage unknown, or past what the request allows). */
  estimatedCalls: z.number().int().nonnegative(),
  inputTokens: z.number().int().nonnegative(),
  outputTokens: z.number().int().nonnegative(),
  cacheReadTokens: z.number().int().nonnegative(),
  cacheWriteTokens: z.number().int().nonnegative(),
  costMicros: z.number().int().nonnegative(),
  /**
   * The exact sum in nano-dollars; absent when past Number.MAX_SAFE_INTEGER (2^53 − 1 n$, about
   * $9.007M), which a JSON number cannot carry exactly (costMicros can, to about $9 billion).
   */
  costNanos: z.number().int().nonnegative().optional(),
});
export type CostRow = z.infer<typeof CostRow>;

/** `GET /api/costs?by=agent&since=7d` response; `since` is ISO-8601 (server clock). */
export const CostRollup = z.object({
  by: CostGroup,
  since: z.string(),
  rows: z.array(CostRow),
  total: CostRow.omit({ key: true }),
});
export type CostRollup = z.infer<typeof CostRollup>;

/**
 * What a `since` window may be, in the words of the refusals (CLI `--since`, API `since`): the
 * rule of {@link parseSince}.
 */
export const SINCE_RULE = 'like 30m, 12h, 7d, 2w (1 to 6 digits) or an ISO-8601 date or date-time, UTC unless it gives an offset (e.g. 2026-11-01, 2026-11-01T09:00+02:00), not before 1970';

/**
 * An ISO-8601 date, or date and time (`T` or one space between; seconds and a fraction
 * optional) with an optional offset (`Z`, `+02:00`): RFC 3339's profile, the space and a
 * missing offset allowed. Nothing else: Date.parse also takes `2026-12-07 PST` or
 * `2026-12-07 (hello)` (fresh-tester finding).
 */
const ISO_SINCE = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})?)?$/i;

/**
 * A `since` window: `<n>m|h|d|w` back from now, n 1..999999 (e.g. `7d`, `12h`), or an ISO-8601
 * date/time ({@link ISO_SINCE}), in UTC unless it gives an offset — a date alone is 00:00 UTC,
 * and a time without an offset is UTC too, whatever the time zone of the process that reads
 * it (it was the server's: two replicas read one window two ways, fresh-tester finding), as the
 * rollups' days are UTC days; never before 1970-01-01 (epoch 0: `100000w` reached back to 1917
 * and was shown as 1970, fresh-tester finding).
 * @returns epoch ms, or null when the text is neither (`0d`, a window of nothing, included; a
 *   day its month does not have, such as `2026-02-30`, which Date.parse moves into March; and
 *   text with spaces around it, as every number and id the CLI and API take: `'7d '` was read
 *   as 7d while `' 1'` was refused as a job id, fresh-user finding).
 */
export function parseSince(text: string, now: number): number | null {
  if (text !== text.trim()) return null;
  const m = /^(\d{1,6})([mhdw])$/.exec(text);
  if (m && Number(m[1]) === 0) return null;
  if (m) {
    const unit = { m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 }[m[2] as 'm' | 'h' | 'd' | 'w'];
    const t = now - Number(m[1]) * unit;
    return t >= 0 ? t : null;
  }
  const iso = ISO_SINCE.exec(text);
  if (!iso) return null;
  // a day the month does not have: Date.parse rolls 2026-02-30 over to March 2 (fresh-user finding)
  const [y, mo, d] = [Number(iso[1]), Number(iso[2]), Number(iso[3])];
  if (mo < 1 || mo > 12 || d < 1 || d > new Date(Date.UTC(y, mo, 0)).getUTCDate()) return null;
  const [hh = '00', mi = '00', ss = '00', frac = '', zone = 'Z'] = iso.slice(4);
  if (Number(hh) > 23 || Number(mi) > 59 || Number(ss) > 59) return null;
  const t = Date.parse(`${iso[1]}-${iso[2]}-${iso[3]}T${hh}:${mi}:${ss}${frac.slice(0, 4)}${zone.toUpperCase()}`);
  return Number.isFinite(t) && t >= 0 ? t : null;
}

/** Where a budget refusal's top-up advice starts (gateway/budget.ts budgetMessage: `… Top up with: flotilla budget N --add <USD>`). */
export const TOP_UP_HINT = ' Top up with: ';

/** A budget refusal's text without its top-up advice (`flotilla run --local`: its server ends with the command, no top-up can come); another text as it is. */
export function withoutTopUpHint(message: string): string {
  const at = message.indexOf(TOP_UP_HINT);
  return at === -1 ? message : message.slice(0, at);
}
