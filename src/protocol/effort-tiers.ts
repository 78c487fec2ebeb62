import { z } from 'zod';
import { HarnessModel } from './harness-model.js';

/** Effort levels a tier may name (Claude Code 2.1 `--effort`; same list as core/effort.ts EFFORT_LEVELS). */
export const EffortLevel = z.enum(['low', 'medium', 'high', 'xhigh', 'max']);
export type EffortLevel = z.infer<typeof EffortLevel>;

/** A tier name: lower-case letters, digits and `-`, starting with a letter, at most 64 characters. */
export const EffortTierName = z.string().regex(/^[a-z][a-z0-9-]{0,63}$/, 'must be lower-case letters, digits and -, starting with a letter, at most 64 characters');

/**
 * An effort tier as the API shows it (issue 8, Settings). `source`: `builtin` (max, high,
 * medium), `config` (FLOTILLA_EFFORT_TIERS of the server) or `account` (stored with
 * `PUT /api/effort-tiers/{name}`; wins over the others). `updatedAt` ISO-8601 for `account`, else null.
 */
export const EffortTierView = z.object({
  name: z.string(),
  model: z.string(),
  level: z.string(),
  source: z.enum(['builtin', 'config', 'account']),
  updatedAt: z.string().nullable(),
});
export type EffortTierView = z.infer<typeof EffortTierView>;

/**
 * `GET /api/effort-tiers`: the tiers in effect, by name, and the account's default tier (or
 * null). `defaultSource`: `account` (set with `PUT /api/effort-default`), `config` (the
 * server's FLOTILLA_DEFAULT_EFFORT) or null when there is no default.
 */
export const EffortTierList = z.object({ tiers: z.array(EffortTierView), defaultTier: z.string().nullable(), defaultSource: z.enum(['account', 'config']).nullable().default(null) });
export type EffortTierList = z.infer<typeof EffortTierList>;

/** `PUT /api/effort-tiers/{name}` body (admin): the model ({@link HarnessModel}) and the effort level. */
export const SetEffortTierRequest = z.object({ model: HarnessModel, level: EffortLevel }).strict();
export type SetEffortTierRequest = z.infer<typeof SetEffortTierRequest>;
