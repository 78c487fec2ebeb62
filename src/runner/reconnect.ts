/**
 * When a runner tries its control plane again after a connection ended (session.ts): jittered
 * exponential backoff, spread over a window after a server restart, the server's "busy, retry
 * after", and never so late that the runner's lease on its running jobs runs out first.
 */

/**
 * Jittered exponential backoff for reconnects, milliseconds. `spreadMs` (optional): spread
 * every reconnect uniformly over at least this window ("full jitter"), so a fleet that lost
 * its server at the same instant does not come back in the same second.
 */
export interface ReconnectPolicy {
  minMs: number;
  maxMs: number;
  spreadMs?: number;
}

/** How long before its lease runs out a runner with running jobs tries to reconnect at the latest, ms (a hello needs one round trip to count). */
export const LEASE_RECONNECT_LEAD_MS = 1000;
/** Shortest wait between reconnects while a lease is about to run out, ms. */
const LEASE_RECONNECT_MIN_MS = 200;

/**
 * The reconnect wait `delay` (ms), shortened so that a runner with running jobs tries again
 * {@link LEASE_RECONNECT_LEAD_MS} before its lease runs out (`leftMs`, lease.ts msUntilStop;
 * null: no running job or no lease): the spread over the reconnect window keeps a fleet from
 * reconnecting at once after a server restart, but a runner that waited it out in full could let
 * its lease run out (and stop its jobs) while the server had been back for seconds (tester: a
 * 4 s restart lost jobs). Runners' leases end at different times (each counts from its own last
 * heartbeat), so this keeps their reconnects spread. At least {@link LEASE_RECONNECT_MIN_MS}.
 */
export function beforeLeaseRunsOut(delay: number, leftMs: number | null): number {
  if (leftMs === null) return delay;
  return Math.min(delay, Math.max(LEASE_RECONNECT_MIN_MS, leftMs - LEASE_RECONNECT_LEAD_MS));
}

/**
 * Delay before reconnect number `failures` (0-based), ms: w = min·2^n capped at max; without
 * `spreadMs` a random 0.5–1 of w; with it a random 0–1 of max(w, spreadMs) (never above max
 * unless spreadMs is).
 */
export function backoffDelay(failures: number, policy: ReconnectPolicy, random: () => number = Math.random): number {
  const raw = Math.min(policy.maxMs, policy.minMs * 2 ** Math.min(failures, 30));
  if (policy.spreadMs) return Math.round(Math.max(raw, policy.spreadMs) * random());
  return Math.round(raw * (0.5 + 0.5 * random()));
}

/** Delay after a `503` with `Retry-After: s` ("busy, retry after"): s to 2s seconds, in ms. */
export function retryAfterDelay(seconds: number, random: () => number = Math.random): number {
  return Math.round(seconds * 1000 * (1 + random()));
}
