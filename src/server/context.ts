import type { Store } from '../store/types.js';
import type { TreeLimits } from '../protocol/index.js';
import type { Logger } from '../core/log.js';
import type { TaskEngine } from './tasks/engine.js';
import type { AgentRegistry } from './agents.js';
import type { EventBus } from './event-bus.js';
import type { RunnerHub } from './hub.js';
import type { Dispatcher } from './dispatcher.js';
import type { EffortSettings } from './effort-cache.js';

/** Everything the HTTP routes share. Times in ms (server clock via `now`). */
export interface ServerContext {
  store: Store;
  agents: AgentRegistry;
  bus: EventBus;
  hub: RunnerHub;
  dispatcher: Dispatcher;
  /** The account's effort settings, cached (effort-cache.ts); the effort routes invalidate it after a change. */
  effort: EffortSettings;
  log: Logger;
  now: () => number;
  /** Runner silence after which it counts as offline (runner status in the API). */
  heartbeatTimeoutMs: number;
  /** Tasks and their wakes (issue 7); set by startServer. */
  tasks?: TaskEngine;
  /** Depth and job-count limits per job tree (issue 6); default core/job-tree.ts treeLimitsFromEnv(process.env). */
  treeLimits?: TreeLimits;
  /** A newly registered runner is held (`provisioning`) this long, ms; 0 = not held. */
  newRunnerHoldMs?: number;
  /** How long a resumed job still queued holds its budget room, ms (gateway config budgetHoldMs; default server/budget-sweep.ts BUDGET_HOLD_MS): the budget view's `lapsesAt`. */
  budgetHoldMs?: number;
  /** This server's data-folder admin token (`<data>/admin-token`), when it was valid at start: `GET /healthz` proves it holds it (core/tokens.ts adminTokenProof) while it stays valid. */
  adminToken?: string;
  sse: {
    /** Comment line interval keeping idle streams open (default 15000). */
    heartbeatMs: number;
    /** Store poll interval for events written by other replicas (default 1000). */
    pollMs: number;
    /** Closers of open streams, called on shutdown. */
    open: Set<() => void>;
  };
}
