import type { AgentDefinition, EventBody, JobEvent } from '../protocol/index.js';
import type { JobRow, NewJob, QueuedJobRef } from '../store/types.js';
import type { DispatchState, OwnerLimits } from '../store/dispatch-types.js';
import { hashToken, newToken } from '../core/tokens.js';
import { sendAssignment, type AssignDeps } from './dispatch-assign.js';
import { bestRunner, FIRST_PAGE, openRunners, runnerSlots } from './dispatch-match.js';
import type { RunnerConnection } from './hub.js';

// A job created through `POST /api/jobs` while this server's dispatcher is idle (issue 5: the
// time from the POST to the runner's `job.assign`). The dispatch state is read first; when no
// older job is queued and a runner here can take the new one, the job is stored already
// assigned to it (one write, one commit: store/job-enqueue.ts) and sent; otherwise it is
// stored queued, behind the older ones, and a pass over that read follows (dispatcher.ts).

/** A job created here: its row and events (`assigned` when a runner took it with its creation). */
export interface CreatedJob {
  job: JobRow;
  event: JobEvent;
  assigned?: JobEvent;
}

/** What {@link placeNewJob} needs: the dispatch deps, whether some loaded agent's jobs hold nothing, and the hub's applyOwnerLimits. */
export interface NewJobDeps extends AssignDeps {
  anyNoneAgent: () => boolean;
  applyOwnerLimits: (limits: readonly OwnerLimits[]) => void;
}

/**
 * A new job's own workspace (its id is not known before it is stored): no live job has it, so it
 * never conflicts with one (core/capacity.ts whyNotFits).
 */
const OWN_WORKSPACE = -1;

/**
 * Creates root job `j` (its `queued` event, then `assigned` when a runner here took it) and
 * publishes its events on the bus. `created` resolves once it is stored (the caller answers the
 * POST; rejects with the store's error, nothing stored); `after` resolves once the job was sent
 * or left queued, with what the dispatcher does next: `drained` (it was the only queued job and
 * it was sent: the queue is empty), a state for a pass (older jobs were queued: the first read
 * with the new job in its page), `pass` (its runner could not be reached: back in the queue, a
 * pass reads afresh), or null (no runner here fits it now: it waits for the next pass). `after`
 * rejects when the first read failed (the job is then created queued all the same).
 * The caller holds the dispatcher (no pass runs meanwhile): only this server assigns to its runners.
 */
export function placeNewJob(o: NewJobDeps, conns: readonly RunnerConnection[], j: NewJob, queued: EventBody, agent: AgentDefinition): { created: Promise<CreatedJob>; after: Promise<DispatchState | 'drained' | 'pass' | null> } {
  let resolve!: (c: CreatedJob) => void;
  let reject!: (err: unknown) => void;
  const created = new Promise<CreatedJob>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  /** Stores the job (assigned when `assign` is given), publishes its events, and hands it to the caller; null when the store refused (the caller got the error). */
  const store = async (assign?: Parameters<AssignDeps['store']['createRootJobWithEvent']>[2]): Promise<CreatedJob | null> => {
    try {
      const c = await o.store.createRootJobWithEvent(j, queued, assign);
      o.bus.publish(c.job.id, c.assigned ? [c.event, c.assigned] : [c.event]);
      resolve(c);
      return c;
    } catch (err) {
      reject(err);
      return null;
    }
  };
  const after = (async (): Promise<DispatchState | 'drained' | 'pass' | null> => {
    let st: DispatchState;
    try {
      st = await o.store.listDispatchState(FIRST_PAGE, o.now());
    } catch (err) {
      await store();
      throw err;
    }
    if (st.queue.length > 0) {
      // Older jobs wait: this one queues behind them (dispatch order), and the pass takes the page.
      const c = await store();
      return c ? newJobInPage(st, queuedRef(c.job), FIRST_PAGE) : null;
    }
    o.applyOwnerLimits(st.ownerLimits); // capacity set through another replica
    const slots = runnerSlots(conns, st, o.anyNoneAgent());
    const open = openRunners(slots, st.heldRunnerIds, o.now());
    const best = bestRunner({ pinnedRunnerId: j.pinnedRunnerId ?? null, selector: j.selector }, agent.holds, j.workspaceJobId ?? OWN_WORKSPACE, open, slots.kept);
    if (best < 0) {
      await store();
      return null;
    }
    const pick = open[best]!.c;
    const token = newToken('flj');
    const c = await store({
      runnerId: pick.runnerId,
      tokenHash: hashToken(token),
      holds: agent.holds,
      event: { type: 'status', data: { status: 'assigned', message: `assigned to runner ${pick.name}`, runnerId: pick.runnerId } },
    });
    if (!c) return null;
    const account = await o.effort.get().catch((err: Error) => err);
    // Not sent: back in the queue (sendAssignment), for a pass now (its runner is gone from the hub).
    return (await sendAssignment(o, pick, agent, c.job, token, account)) ? 'drained' : 'pass';
  })();
  return { created, after };
}

/** Job `j` as a dispatch pass matches it (the fields of a queue read). */
export function queuedRef(j: JobRow): QueuedJobRef {
  return { id: j.id, priority: j.priority, selector: j.selector, pinnedRunnerId: j.pinnedRunnerId ?? null, agent: j.agent, agentVersion: j.agentVersion, workspaceJobId: j.workspaceJobId ?? null };
}

/**
 * `st` (a first page of at most `limit` read before or beside `job`'s creation) with `job` in it
 * when it belongs there: a read from before the commit lacks it. Dispatch order (priority
 * descending, then id); when it sorts past a full page it is left for the next page read (keyset
 * after the page's last job, so nothing is skipped), and a job it pushes out of a full page is too.
 */
export function newJobInPage(st: DispatchState, job: QueuedJobRef, limit: number): DispatchState {
  if (st.queue.some((q) => q.id === job.id)) return st;
  const queue = [...st.queue, job].sort((a, b) => b.priority - a.priority || a.id - b.id);
  if (queue.length > limit) queue.length = limit;
  return queue.includes(job) ? { ...st, queue } : st;
}
