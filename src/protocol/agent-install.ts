import { z } from 'zod';

/**
 * `POST /api/agents/install` body (issue 6, agents as plugins): `source` is a git URL, a path
 * to a git repository, or a plain folder (paths as the server sees them); `ref` a branch, tag
 * or commit (git only; default: the repository's HEAD); `replace: true` lets an installed agent
 * shadow a built-in folder agent of the same name (refused otherwise).
 */
export const InstallAgentsRequest = z
  .object({
    source: z.string().min(1).max(2000),
    ref: z.string().min(1).max(200).optional(),
    /** Allow an agent of the repository to replace (shadow) a built-in folder agent of the same name. Default false: refused with 409 `agent_exists`. */
    replace: z.boolean().optional(),
  })
  .strict();
export type InstallAgentsRequest = z.infer<typeof InstallAgentsRequest>;

/**
 * One installed version of an agent. `version` is `v<seq>-<first 12 of the commit>` and is
 * what a job of it records as `agentVersion`; `commit` is the resolved git commit (40 hex) or
 * `sha256:<64 hex>` of a plain folder's files; `current` marks the version new jobs get.
 */
export const AgentVersionInfo = z.object({
  name: z.string(),
  version: z.string(),
  source: z.string(),
  ref: z.string().nullable(),
  commit: z.string(),
  /** ISO 8601 time of the install (server clock). */
  installedAt: z.string(),
  current: z.boolean(),
});
export type AgentVersionInfo = z.infer<typeof AgentVersionInfo>;

/** `POST /api/agents/install` 201 response: the new version of every agent of the repository. */
export const InstallAgentsResponse = z.object({ installed: z.array(AgentVersionInfo) });
export type InstallAgentsResponse = z.infer<typeof InstallAgentsResponse>;

/** `GET /api/agents/versions` response: every installed version, by name then oldest first. */
export const AgentVersionList = z.object({ versions: z.array(AgentVersionInfo) });
export type AgentVersionList = z.infer<typeof AgentVersionList>;
