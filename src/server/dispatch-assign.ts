import type { AgentDefinition, JobAssignment, JobHolds } from '../protocol/index.js';
import type { JobRow, QueuedJobRef, Store } from '../store/types.js';
import { slotsUsed, type HeldSlot, type RunnerLimits } from '../core/capacity.js';
import type { Logger } from '../core/log.js';
import { hashToken } from '../core/tokens.js';
import type { EventBus } from './event-bus.js';
import type { RunnerConnection } from './hub.js';
import { recordStatus } from './status-events.js';
import { jobEffort, type AccountEffort } from './effort.js';
import type { EffortSettings } from './effort-cache.js';

// The batch half of a dispatch pass (dispatcher.ts plans, this claims and sends): the jobs a
// pass matched on one page are claimed in one store transaction with their `assigned` events
// (store.claimJobsById), then every `job.assign` is sent at once (issue 5 benchmark).

/** What {@link assignPlanned} needs of the dispatcher's options. */
export interface AssignDeps {
  store: Store;
  bus: EventBus;
  effort: EffortSettings;
  log: Logger;
  now: () => number;
}

/** A runner a dispatch pass may still give jobs to: its active jobs and free parallel-job slots. */
export interface OpenRunner {
  c: RunnerConnection;
  active: HeldSlot[];
  free: number;
}

/** The runner's capacity limits as core/capacity.ts counts them. */
export function limitsOf(c: RunnerConnection): RunnerLimits {
  return { capacity: c.capacity, browserSlots: c.browserSlots };
}

/** Runner `c` with its `active` slots (copied: a pass adds to them) and its free parallel-job slots. */
export function openRunner(c: RunnerConnection, active: HeldSlot[]): OpenRunner {
  return { c, active: [...active], free: c.capacity - slotsUsed(active, limitsOf(c)) };
}

/** What one pass keeps across its pages: agents re-read yet, the effort settings (got once, when a job is assigned), claims lost, jobs sent to their runners. */
export interface PassState {
  refreshed: boolean;
  account: Promise<AccountEffort | Error> | null;
  lost: number;
  sent: number;
}

/** A queued job matched to a runner in this pass, its slot already counted, not yet claimed. */
export interface Planned {
  q: QueuedJobRef;
  pick: OpenRunner;
  agent: AgentDefinition;
  holds: JobHolds;
  slot: HeldSlot;
  /** The idle task's kept slot this job took over, if any (put back when the claim does not take). */
  keptTaken: HeldSlot | null;
  /** The job token (`flj_...`); only its hash is stored. */
  token: string;
}

/** A planned claim that did not take: its slot (and any kept task slot it took) back, its runner back in `open`. */
function giveBack(p: Planned, open: OpenRunner[], kept: Map<number, HeldSlot[]>): void {
  const i = p.pick.active.indexOf(p.slot);
  if (i >= 0) p.pick.active.splice(i, 1);
  if (p.keptTaken) kept.get(p.pick.c.runnerId)?.push(p.keptTaken);
  p.pick.free = p.pick.c.capacity - slotsUsed(p.pick.active, limitsOf(p.pick.c));
  if (!open.includes(p.pick)) open.push(p.pick);
}

/**
 * Claims a page's planned assignments in one store transaction (each with its `assigned`
 * status event), then sends every `job.assign` at once. A claim that did not take gives its
 * slot back; a send that fails puts the job back in the queue and takes the runner out of
 * `open` for the rest of the pass. `noted` (queued jobs told no runner matches) loses the
 * claimed ones.
 * @throws Error from the store (the pass logs it; the next pass starts over from the store).
 */
export async function assignPlanned(
  o: AssignDeps,
  plan: readonly Planned[],
  open: OpenRunner[],
  kept: Map<number, HeldSlot[]>,
  pass: PassState,
  noted: { delete(jobId: number): unknown },
): Promise<void> {
  const { store, bus, now } = o;
  // The effort settings (cached, effort-cache.ts; a read, when due, runs beside the claim), once per pass.
  const account = (pass.account ??= o.effort.get().catch((err: Error) => err));
  const claimed = await store.claimJobsById(
    plan.map((p) => ({
      jobId: p.q.id,
      runner: { id: p.pick.c.runnerId, labels: p.pick.c.labels },
      tokenHash: hashToken(p.token),
      holds: p.holds,
      event: { type: 'status', data: { status: 'assigned', message: `assigned to runner ${p.pick.c.name}`, runnerId: p.pick.c.runnerId } },
    })),
    now(),
  );
  const got = new Map(claimed.map((x) => [x.job.id, x]));
  for (const p of plan) {
    if (got.has(p.q.id)) continue;
    // Taken meanwhile (another replica, jobs start, cancel): the runner's slot is free again.
    pass.lost++;
    giveBack(p, open, kept);
  }
  if (claimed.length === 0) return;
  const sends = plan
    .filter((p) => got.has(p.q.id))
    .map(async (p) => {
      const { job, event } = got.get(p.q.id)!;
      noted.delete(job.id);
      bus.publish(job.id, [event]);
      if (await sendAssignment(o, p.pick.c, p.agent, job, p.token, await account)) {
        pass.sent++;
        return;
      }
      const i = open.indexOf(p.pick);
      if (i >= 0) open.splice(i, 1);
    });
  await Promise.all(sends);
}

/**
 * Sends claimed (assigned) `job` to its runner `conn` as `job.assign` with its token (effort
 * from `account`, the settings read once per pass; `force`: placed by `jobs start --force`, the
 * runner runs it past its capacity). A send that fails puts the job back in the queue (fenced by
 * its attempt) with a `queued` status event. @returns whether it was sent.
 */
export async function sendAssignment(o: AssignDeps, conn: RunnerConnection, agent: AgentDefinition, job: JobRow, token: string, account: AccountEffort | Error, force = false): Promise<boolean> {
  const { store, bus, now, log } = o;
  const assignment: JobAssignment = {
    jobId: job.id,
    rootId: job.rootId,
    attempt: job.attempt,
    agent,
    input: job.input,
    token,
    resumeSessionId: job.resumeSessionId,
    workspaceJobId: job.workspaceJobId ?? null,
    ...effortFrom(job.effortTier, agent, account, log),
    ...(force ? { force: true } : {}),
    capacity: conn.capacity,
  };
  if (await conn.send({ type: 'job.assign', assignment })) {
    log.info('job assigned', { jobId: job.id, attempt: job.attempt, runnerId: conn.runnerId, force });
    return true;
  }
  const t = now();
  if (await store.requeueJob(job.id, job.attempt, t)) {
    await recordStatus(store, bus, job.id, 'queued', `could not reach runner ${conn.name}; back in the queue`, t, conn.runnerId);
  }
  return false;
}

/** The assignment's `effort` (run tier > agent tier > account default) from the account settings read once per pass (`account` is the read's error when it failed: logged, ignored). */
export function effortFrom(runTier: string | null | undefined, agent: AgentDefinition, account: AccountEffort | Error, log: Logger): Pick<JobAssignment, 'effort'> {
  try {
    if (account instanceof Error) throw account;
    const e = jobEffort(runTier, agent, account);
    return e ? { effort: e } : {};
  } catch (err) {
    log.warn('effort tier ignored', { error: (err as Error).message });
    return {};
  }
}
