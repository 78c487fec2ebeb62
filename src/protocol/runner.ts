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
  version: z.string().nullable(),
  lastHeartbeatAt: z.string().nullable(),
  createdAt: z.string(),
});
export type Runner = z.infer<typeof Runner>;

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
