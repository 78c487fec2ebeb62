import { z } from 'zod';
import { Labels } from './labels.js';

/** Runner status, judged on the server's clock from heartbeats. */
export const RunnerStatus = z.enum(['online', 'busy', 'on_hold', 'provisioning', 'updating', 'offline']);
export type RunnerStatus = z.infer<typeof RunnerStatus>;

/** A runner as the API returns it. Times are ISO-8601 (server clock). */
export const Runner = z.object({
  id: z.number().int().positive(),
  name: z.string(),
  labels: Labels,
  status: RunnerStatus,
  /** Parallel jobs this runner takes (1–4). */
  capacity: z.number().int().min(1).max(4),
  runningJobs: z.array(z.number().int()),
  /** Parallel-job slots its jobs hold (0..capacity): jobs holding `none` take none, a `runner` job all (issue 5). */
  slotsUsed: z.number().int().min(0).max(4).optional(),
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
 * `extend: true` adds `for` to the end of the active hold (409 `not_held` when there is none).
 */
export const HoldRunnerRequest = z
  .object({ for: HoldDuration, reason: z.string().trim().min(1).max(500), extend: z.boolean().default(false) })
  .strict();
export type HoldRunnerRequest = z.infer<typeof HoldRunnerRequest>;

/** `GET /api/runners` response: the runners plus the number of queued jobs. */
export const RunnerList = z.object({ runners: z.array(Runner), queued: z.number().int().nonnegative().optional() });
export type RunnerList = z.infer<typeof RunnerList>;

/** `GET /api/runners/{id}` response: the runner and its most recent jobs (newest first). */
export const RunnerDetail = z.object({ runner: Runner, recentJobs: z.array(z.object({ id: z.number().int(), agent: z.string(), status: z.string(), attempt: z.number().int(), createdAt: z.string(), finishedAt: z.string().nullable() })) });
export type RunnerDetail = z.infer<typeof RunnerDetail>;

/** `POST /api/jobs/{id}/start` body: place a queued job now (on `runnerId` if given); `force` goes past capacity and holds. */
export const StartJobRequest = z
  .object({ runnerId: z.number().int().positive().optional(), force: z.boolean().default(false) })
  .strict();
export type StartJobRequest = z.infer<typeof StartJobRequest>;

/** `POST /api/runner-tokens` body: a single-use registration token for new runners. */
export const CreateRunnerTokenRequest = z
  .object({
    labels: Labels.default({}),
    /** Lifetime of the token, seconds (default 1 h, at most 30 days). */
    expiresInSeconds: z.number().int().positive().max(30 * 24 * 3600).default(3600),
  })
  .strict();
export type CreateRunnerTokenRequest = z.infer<typeof CreateRunnerTokenRequest>;

/** `POST /api/runners/register` body: trade a registration token for a runner credential. */
export const RegisterRunnerRequest = z
  .object({
    token: z.string().min(1),
    name: z.string().min(1).max(100),
    labels: Labels.default({}),
    capacity: z.number().int().min(1).max(4).default(1),
  })
  .strict();
export type RegisterRunnerRequest = z.infer<typeof RegisterRunnerRequest>;

/** `POST /api/runners/register` response. `credential` is shown once; the runner keeps it in its work folder. */
export const RegisterRunnerResponse = z.object({ runnerId: z.number().int(), credential: z.string() });
export type RegisterRunnerResponse = z.infer<typeof RegisterRunnerResponse>;
