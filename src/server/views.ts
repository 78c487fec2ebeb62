import type { Job, JobUsage, Runner, RunnerStatus } from '../protocol/index.js';
import type { JobRow, RunnerRow, TaskSlot } from '../store/types.js';
import { slotsUsed, type HeldSlot } from '../core/capacity.js';

/** Epoch ms → ISO-8601 (server clock). */
export function iso(ms: number): string {
  return new Date(ms).toISOString();
}

/** Epoch ms or null → ISO-8601 or null. */
export function isoOrNull(ms: number | null): string | null {
  return ms === null ? null : iso(ms);
}

/** A store job row (times in ms) → the API's {@link Job} (ISO strings), with `usage` when given. */
export function jobView(row: JobRow, usage?: JobUsage): Job {
  return {
    id: row.id,
    parentId: row.parentId,
    rootId: row.rootId,
    agent: row.agent,
    agentVersion: row.agentVersion,
    input: row.input,
    status: row.status,
    endReason: row.endReason,
    error: row.error,
    priority: row.priority,
    selector: row.selector,
    runnerId: row.runnerId,
    attempt: row.attempt,
    budgetMicros: row.budgetMicros,
    sessionId: row.sessionId,
    result: row.result,
    createdAt: iso(row.createdAt),
    assignedAt: isoOrNull(row.assignedAt),
    startedAt: isoOrNull(row.startedAt),
    finishedAt: isoOrNull(row.finishedAt),
    ...(usage ? { usage } : {}),
  };
}

/**
 * A runner's status on the server's clock: `revoked` when it is revoked (for good: its
 * credential is refused); else `offline` when the sweep flagged
 * it, it is not connected, it never sent a heartbeat, or its last one is older than
 * `timeoutMs`; else `provisioning` / `on_hold` while a hold of that kind runs past `now`;
 * else `busy` while its jobs hold slots, `online` without. `activeJobs`: the parallel-job
 * slots in use (jobs that hold `none` take none, core/capacity.ts), not the job count.
 * `updating` (the hub's mark, runner-updates.ts: it is updating itself): `updating` unless
 * revoked or offline by the sweep or the heartbeat rule; it wins over `connected` being false,
 * since the runner disconnects to re-execute itself on the new code, and over holds and jobs.
 */
export function runnerStatus(row: RunnerRow, activeJobs: number, now: number, timeoutMs: number, updating = false): RunnerStatus {
  if (row.revokedAt !== null) return 'revoked';
  if (updating && !row.offline && row.lastHeartbeatAt !== null && now - row.lastHeartbeatAt <= timeoutMs) return 'updating';
  if (row.offline || !row.connected || row.lastHeartbeatAt === null || now - row.lastHeartbeatAt > timeoutMs) return 'offline';
  if (row.hold && row.hold.until > now) return row.hold.kind === 'provisioning' ? 'provisioning' : 'on_hold';
  return activeJobs > 0 ? 'busy' : 'online';
}

/**
 * A store runner row + its active job ids → the API's {@link Runner}. `now`/`timeoutMs` in ms.
 * `held`: what those jobs hold (store `ActiveAssignment`s of this runner); `slotsUsed` counts
 * only held slots (issue 5 capacity rule, core/capacity.ts `slotsUsed`: `none` jobs take none,
 * a `runner` job takes all). Without `held` every running job counts as one slot. `updating`:
 * the hub says it is updating itself (see {@link runnerStatus}). `kept`: the slots idle tasks
 * keep on this runner (store listTaskSlots, this runner's), as `keptSlots` — but for a task
 * whose turn runs there now (counted once, as that job: tasks/slot-holds.ts withTaskSlots).
 */
export function runnerView(row: RunnerRow, runningJobs: number[], now: number, timeoutMs: number, held?: readonly HeldSlot[], updating = false, kept?: readonly TaskSlot[]): Runner {
  const used = held ? slotsUsed(held, { capacity: row.capacity, browserSlots: row.browserSlots }) : runningJobs.length;
  const keptSlots = kept?.filter((k) => !held?.some((h) => h.workspace === k.workspace)).map((k) => ({ taskId: k.taskId, until: iso(k.until) }));
  return {
    id: row.id,
    name: row.name,
    labels: row.labels,
    status: runnerStatus(row, used, now, timeoutMs, updating),
    capacity: row.capacity,
    runningJobs,
    slotsUsed: used,
    ...(keptSlots ? { keptSlots } : {}),
    version: row.version,
    lastHeartbeatAt: isoOrNull(row.lastHeartbeatAt),
    createdAt: iso(row.createdAt),
    hold: row.hold && row.hold.until > now ? { until: iso(row.hold.until), reason: row.hold.reason, kind: row.hold.kind } : null,
    revokedAt: isoOrNull(row.revokedAt),
    browserSlots: row.browserSlots,
    boundLabels: row.boundLabels,
  };
}

/** `{os: "linux", gpu: "a100"}` → `os=linux,gpu=a100` (for messages). */
export function formatLabels(labels: Record<string, string>): string {
  return Object.entries(labels)
    .map(([k, v]) => `${k}=${v}`)
    .join(',');
}
