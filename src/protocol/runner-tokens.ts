import { z } from 'zod';
import { Id } from './ids.js';
import { Labels } from './labels.js';

/**
 * Where a runner registration token stands (server clock): `live` (can still register a
 * runner), `used` (traded for a runner credential), `expired`, `revoked` (by an admin).
 */
export const RunnerTokenStatus = z.enum(['live', 'used', 'expired', 'revoked']);
export type RunnerTokenStatus = z.infer<typeof RunnerTokenStatus>;

/**
 * A runner registration token as listed (`GET /api/runner-tokens`) or revoked (`POST
 * /api/runner-tokens/{id}/revoke`): never the token or its hash. Times are ISO-8601;
 * `usedAt`/`revokedAt` null when it was not used / not revoked.
 */
export const RunnerTokenInfo = z.object({
  id: Id,
  labels: Labels,
  status: RunnerTokenStatus,
  createdAt: z.string(),
  expiresAt: z.string(),
  usedAt: z.string().nullable(),
  revokedAt: z.string().nullable(),
});
export type RunnerTokenInfo = z.infer<typeof RunnerTokenInfo>;

/** `GET /api/runner-tokens[?all=true]` response: the live tokens (every token with `all`), oldest first. */
export const RunnerTokenList = z.object({ tokens: z.array(RunnerTokenInfo) });
export type RunnerTokenList = z.infer<typeof RunnerTokenList>;
