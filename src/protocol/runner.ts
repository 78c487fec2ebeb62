import { z } from 'zod';
import { Id } from './ids.js';
import { Labels, RoleName } from './labels.js';
import { oneLineText } from './text.js';

export { RoleName };

/** What a runner name and a role value may be: a letter or digit, then up to 62 of letters, digits, `.`, `_`, `-`. */
const NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$/;

/** A runner name (`runner --name`, registration): 1–63 chars of `[A-Za-z0-9._-]`, first a letter or digit. */
export const RunnerName = z.string().regex(NAME_PATTERN, 'a runner name must be 1-63 characters of A-Z, a-z, 0-9, ".", "_", "-", starting with a letter or digit');


/**
 * A valid runner name made from a host name (the default name): characters outside
 * `[A-Za-z0-9._-]` become `-`, leading ones that may not start a name are dropped, at most 63
 * characters; `runner` when nothing is left.
 */
export function runnerNameFrom(host: string): string {
  const name = host.replace(/[^A-Za-z0-9._-]/g, '-').replace(/^[^A-Za-z0-9]+/, '').slice(0, 63);
  return name === '' ? 'runner' : name;
}

/** Adds an issue at `labels.role` when a `role` label is not a {@link RoleName} (registration, registration tokens). */
function checkRoleLabel(labels: Labels, ctx: z.RefinementCtx): void {
  if (labels.role === undefined) return;
  const r = RoleName.safeParse(labels.role);
  if (!r.success) ctx.addIssue({ code: 'custom', path: ['labels', 'role'], message: r.error.issues[0]?.message ?? 'invalid role' });
}

/** Runner status, judged on the server's clock from heartbeats; `revoked` once an admin revoked it (it can never connect again). */
export const RunnerStatus = z.enum(['online', 'busy', 'on_hold', 'provisioning', 'updating', 'offline', 'revoked']);
export type RunnerStatus = z.infer<typeof RunnerStatus>;

/**
 * A version a runner is told to update to (`runner.update`, `POST /api/runners/{id}/update`):
 * an npm version or dist-tag (`0.2.0`, `1.0.0-rc.1`, `latest`), 1–100 characters of
 * `[A-Za-z0-9.+_-]`, first a letter or digit. Narrow on purpose: it reaches the runner's update
 * command (env `FLOTILLA_UPDATE_VERSION`), so no shell metacharacters, spaces or ranges.
 */
export const UpdateVersion = z.string().regex(/^[A-Za-z0-9][A-Za-z0-9.+_-]{0,99}$/, 'a version must be 1-100 characters of A-Z, a-z, 0-9, ".", "+", "_", "-", starting with a letter or digit (e.g. 0.2.0 or latest)');

/**
 * `POST /api/runners/{id}/update` body (admin): `version` to install (absent: the server's own
 * version). No body, or `{}`, is the same as no version.
 */
export const UpdateRunnerRequest = z.object({ version: UpdateVersion.optional() }).strict();
export type UpdateRunnerRequest = z.infer<typeof UpdateRunnerRequest>;

/** A runner as the API returns it. Times are ISO-8601 (server clock). */
export const Runner = z.object({
  id: z.number().int().positive(),
  name: z.string(),
  labels: Labels,
  status: RunnerStatus,
  /** Parallel jobs this runner takes (1–4). */
  capacity: z.number().int().min(1).max(4),
  runningJobs: z.array(z.number().int()),
  /**
   * Parallel-job slots its jobs hold: jobs holding `none` take none, a `runner` job all (issue 5).
   * Usually 0..capacity, but more when `jobs start --force` placed a job past capacity.
   */
  slotsUsed: z.number().int().min(0).optional(),
  /**
   * Slots kept by idle tasks (issue 7: after a reply a task keeps its runner slot for its
   * agent's idle time, so its next turn starts at once): no other job takes one before `until`
   * (ISO-8601) unless the task is suspended. Not in `slotsUsed` (no job holds them); a job
   * waiting for one says "slot kept by task N". Absent from older servers and from the replies
   * of runner changes (hold, capacity, revoke).
   */
  keptSlots: z.array(z.object({ taskId: z.number().int().positive(), until: z.string() })).optional(),
  version: z.string().nullable(),
  lastHeartbeatAt: z.string().nullable(),
  createdAt: z.string(),
  /** The active dispatch hold (`until` ISO-8601), or null. */
  hold: z.object({ until: z.string(), reason: z.string(), kind: z.enum(['manual', 'provisioning']) }).nullable().optional(),
  /** When the runner was revoked (ISO-8601), or null. */
  revokedAt: z.string().nullable().optional(),
  /** Browser slots (1–4, never more than capacity). */
  browserSlots: z.number().int().min(1).max(4).optional(),
  /** Labels bound by its registration token (the runner cannot change them). */
  boundLabels: Labels.optional(),
});
export type Runner = z.infer<typeof Runner>;

/**
 * `POST /api/runners/{id}/update` response: the runner (status `updating`), the version it was
 * told to install, and `started`: false when it was updating already (nothing was sent again).
 */
export const UpdateRunnerResponse = z.object({ runner: Runner, version: UpdateVersion, started: z.boolean() });
export type UpdateRunnerResponse = z.infer<typeof UpdateRunnerResponse>;

/**
 * `PATCH /api/runners/{id}` body (admin): the owner's capacity setting. `capacity` parallel
 * jobs 1–4, `browserSlots` 1–4 (never more than the capacity in effect); null clears the
 * setting (the runner's own `--capacity` / `--browser-slots` count again); absent = unchanged.
 */
export const SetRunnerCapacityRequest = z
  .object({
    capacity: z.number().int().min(1).max(4).nullable().optional(),
    browserSlots: z.number().int().min(1).max(4).nullable().optional(),
  })
  .strict()
  .refine((v) => v.capacity !== undefined || v.browserSlots !== undefined, { message: 'give capacity and/or browserSlots' });
export type SetRunnerCapacityRequest = z.infer<typeof SetRunnerCapacityRequest>;

/** Hold lengths `flotilla hold --for` takes, in milliseconds. */
export const HOLD_DURATIONS_MS = { '15m': 15 * 60_000, '1h': 3_600_000, '3h': 3 * 3_600_000, '6h': 6 * 3_600_000, '1d': 24 * 3_600_000 } as const;
export const HoldDuration = z.enum(['15m', '1h', '3h', '6h', '1d']);
export type HoldDuration = z.infer<typeof HoldDuration>;

/**
 * `POST /api/runners/{id}/hold` body: no queued job goes to the runner until the hold ends.
 * `extend: true` adds `for` to the end of the active hold (409 `not_held` when there is none)
 * and keeps its reason unless a new `reason` is given; a new hold needs a `reason`.
 */
export const HoldRunnerRequest = z
  .object({ for: HoldDuration, reason: oneLineText(500).optional(), extend: z.boolean().default(false) })
  .strict()
  .refine((v) => v.extend || v.reason !== undefined, { message: 'required for a new hold (only extend: true may leave it out, keeping the current reason)', path: ['reason'] });
export type HoldRunnerRequest = z.infer<typeof HoldRunnerRequest>;

/** `GET /api/runners` response: the runners plus the number of queued jobs. */
export const RunnerList = z.object({ runners: z.array(Runner), queued: z.number().int().nonnegative().optional() });
export type RunnerList = z.infer<typeof RunnerList>;

/**
 * How one attempt of a job went on a runner: the job's status while it is the job's current
 * attempt on that runner; for an earlier one `lost` (the runner went silent, was revoked or
 * stopped reporting it, and the job was retried), `requeued` (back in the queue without
 * running there: refused, never started, unreachable), the status that ended it there
 * (`paused`, `cancelled`, ...), or `ended` when no record says how.
 */
export const AttemptOutcome = z.enum(['assigned', 'running', 'paused', 'cancelling', 'succeeded', 'failed', 'cancelled', 'lost', 'requeued', 'ended']);
export type AttemptOutcome = z.infer<typeof AttemptOutcome>;

/**
 * One attempt of a job on the runner (a runner's recent jobs). `status`, `createdAt` and
 * `finishedAt` are the job's now (it may have moved on: retried elsewhere); `attempt`,
 * `outcome`, `assignedAt` and `endedAt` (null: not ended there, or unknown) are this attempt's.
 * `current`: it is the job's current attempt, still on this runner. Times ISO-8601.
 */
export const RunnerAttempt = z.object({
  id: z.number().int(),
  agent: z.string(),
  status: z.string(),
  attempt: z.number().int(),
  outcome: AttemptOutcome,
  current: z.boolean(),
  createdAt: z.string(),
  assignedAt: z.string().nullable(),
  endedAt: z.string().nullable(),
  finishedAt: z.string().nullable(),
});
export type RunnerAttempt = z.infer<typeof RunnerAttempt>;

/** `GET /api/runners/{id}` response: the runner and its recent jobs, one per attempt that ran on it (newest first). */
export const RunnerDetail = z.object({ runner: Runner, recentJobs: z.array(RunnerAttempt) });
export type RunnerDetail = z.infer<typeof RunnerDetail>;

/** `POST /api/jobs/{id}/start` body: place a queued job now (on `runnerId` if given); `force` goes past capacity and holds. */
export const StartJobRequest = z
  .object({ runnerId: Id.optional(), force: z.boolean().default(false) })
  .strict();
export type StartJobRequest = z.infer<typeof StartJobRequest>;

/** `POST /api/runner-tokens` body: a single-use registration token for new runners (a `role` label must be a {@link RoleName}). */
export const CreateRunnerTokenRequest = z
  .object({
    labels: Labels.default({}),
    /** Lifetime of the token, seconds (default 1 h, at most 30 days). */
    expiresInSeconds: z.number().int().positive().max(30 * 24 * 3600).default(3600),
  })
  .strict()
  .superRefine((v, ctx) => checkRoleLabel(v.labels, ctx));
export type CreateRunnerTokenRequest = z.infer<typeof CreateRunnerTokenRequest>;

/**
 * `POST /api/runners/register` body: trade a registration token for a runner credential. `name`
 * is a {@link RunnerName}; a `role` label must be a {@link RoleName}.
 */
export const RegisterRunnerRequest = z
  .object({
    token: z.string().min(1),
    name: RunnerName,
    labels: Labels.default({}),
    capacity: z.number().int().min(1).max(4).default(1),
  })
  .strict()
  .superRefine((v, ctx) => checkRoleLabel(v.labels, ctx));
export type RegisterRunnerRequest = z.infer<typeof RegisterRunnerRequest>;

/**
 * `POST /api/runners/register` response. `credential` is shown once; the runner keeps it in its
 * work folder. `name`: the name it was registered with: the asked one, or `NAME-2`, `NAME-3`,
 * ... when another runner that is not revoked has it, and then `warning` says so (names are
 * unique among runners that are not revoked; core/runner-names.ts). Older servers send neither.
 */
export const RegisterRunnerResponse = z.object({ runnerId: z.number().int(), credential: z.string(), name: z.string().optional(), warning: z.string().optional() });
export type RegisterRunnerResponse = z.infer<typeof RegisterRunnerResponse>;
