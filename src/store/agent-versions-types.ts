/**
 * Installed agent versions (issue 6, agents as plugins; migration 0011). The definition is
 * kept as stored JSON (`definition`: an AgentDefinition with `promptText`); the server parses
 * it with the protocol schema when it loads it.
 */

/** One agent of an install, as the installer read it. */
export interface NewAgentVersion {
  /** Agent name (the definition's `name`). */
  name: string;
  /** The AgentDefinition (prompt text inlined), any JSON value. */
  definition: unknown;
  /** `script.yaml` text for the offline scripted model, or null. */
  script: string | null;
}

/** Where an install came from: the same for every agent of one install. */
export interface AgentInstallSource {
  /** Git URL or folder path, as given. */
  source: string;
  /** Ref asked for (branch, tag, commit), or null for the default. */
  ref: string | null;
  /** Resolved git commit (40 hex), or `sha256:<64 hex>` of a plain folder's files. */
  commit: string;
}

/** A stored agent version. `version` is `v<seq>-<first 12 of the commit, without "sha256:">`. */
export interface AgentVersionRow extends AgentInstallSource {
  id: number;
  name: string;
  seq: number;
  version: string;
  definition: unknown;
  script: string | null;
  /** Epoch ms, server clock. */
  installedAt: number;
}

/** The store methods for installed agents (store/agent-versions.ts). */
export interface AgentVersionStore {
  /**
   * Stores a new version of every agent in `agents`, all in one transaction (all or none):
   * each gets seq = its previous highest + 1. Returns the rows in the order given.
   * @throws Error naming the field when `agents` is empty, has a name twice or a bad name,
   *   or `from`/`now` are malformed; nothing is stored then.
   */
  installAgentVersions(from: AgentInstallSource, agents: readonly NewAgentVersion[], now: number): Promise<AgentVersionRow[]>;
  /** Every stored version (of agent `name` when given), by name then seq ascending. */
  listAgentVersions(name?: string): Promise<AgentVersionRow[]>;
}
