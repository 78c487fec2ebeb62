import type { Logger } from '../core/log.js';
import type { JobEvent, ServerToRunner } from '../protocol/index.js';
import { isTerminal } from '../core/job-state.js';
import type { JobRow, NeedCall, Store } from '../store/types.js';
import type { BudgetRaised } from '../store/budget-resume.js';
import type { AgentRegistry } from './agents.js';
import type { EventBus } from './event-bus.js';
import { recordStatus } from './status-events.js';
import { failedOnBudget } from '../gateway/budget.js';

/**
 * The gateway's `onBudgetExhausted` hook (issue 3): a call of `job` was refused because its
 * tree is out of budget. Unless the job's agent says `onBudgetExhausted: fail`, the attempt
 * becomes `paused` (endReason `budget`; its token no longer authenticates, the gateway answers
 * it with the budget refusal) with a `status` event, BEFORE the
 * refusal reaches the harness, and its runner is told to stop the attempt's process (`stop`:
 * the `job.cancel` of a cancel with `pause`, without `discard`: after a short settle time in
 * which the harness may exit on the refusal by itself, SIGTERM, grace, SIGKILL of the process
 * group; the workspace and the harness session stay for the resume). A paused job must not keep
 * running behind the fleet's back: until the runner reports the attempt ended, it keeps its
 * runner slot and is not resumed (server/paused-exit.ts settles that report; the hub repeats
 * the stop on heartbeats if it was missed). With `fail`, the job is not paused: its runner is
 * told to end the attempt `failed`, reason `budget` (`job.cancel` with `fail`: the harness gets
 * the same settle time to exit on the refusal, then is stopped; whatever it does, the runner
 * reports failed `budget` with {@link failedOnBudget}'s error), and the job ends on that report,
 * so a harness that keeps running after the refusal (a `command` agent) cannot end `succeeded`
 * or `failed` `error` instead (fresh-user finding). Each later refused call sends it again.
 * `needMicros`, the refused call's worst case in µ$ (grown for a resumed harness's larger
 * request: gateway/worst-case.ts CallWorstCase.resumeMicros), is stored with the pause for the resume
 * rule (store/budget-resume.ts); absent, the store reads it from `message`. `needCall`, what that
 * need was worked out from, is stored with it: server/budget-reprice.ts prices it again when
 * prices change.
 *
 * A top-up that commits between the refusal and the pause finds no paused job to resume (its
 * resumer lists paused jobs only), and the job would wait, paused with room, for a top-up nobody
 * knows is needed. So once the pause is written, the resume rule is checked again for the tree
 * ({@link budgetResumer}, `raised` the tree: every budget on the job's path must have room for
 * `needMicros`): each side writes first and reads after, so whichever of the top-up and the
 * pause comes second sees the other (on several replicas too). Only with `needMicros` given (the
 * gateway always gives it): an unknown need counts as 1 µ$ in the rule, and a tree with dust left
 * would resume the job only for it to be refused and paused again.
 */
export function budgetPauser(o: {
  store: Store;
  agents: AgentRegistry;
  bus: EventBus;
  log: Logger;
  now: () => number;
  /** Sends a frame to a runner (hub.send); absent: nothing is sent (unit tests). */
  stop?: (runnerId: number, msg: ServerToRunner) => Promise<boolean>;
  /** Wakes the dispatcher when the re-check above resumed a job (dispatcher.kick). */
  kick?: () => void;
}) {
  return async (job: JobRow, message: string, needMicros?: number, needCall?: NeedCall): Promise<void> => {
    const policy = o.agents.get(job.agent)?.onBudgetExhausted ?? 'pause';
    if (policy === 'fail') {
      if (job.runnerId !== null && o.stop && (job.status === 'running' || job.status === 'assigned')) {
        o.log.info('job failing: tree out of budget (its agent fails on it)', { jobId: job.id, rootId: job.rootId });
        await o.stop(job.runnerId, { type: 'job.cancel', jobId: job.id, attempt: job.attempt, reason: failedOnBudget(message), fail: true });
      }
      return;
    }
    const now = o.now();
    // the refused call's worst case (µ$) is kept for the resume rule (store/budget-resume.ts)
    const paused = await o.store.pauseJobForBudget(job.id, job.attempt, message, now, needMicros, needCall);
    if (!paused) return;
    o.log.info('job paused: tree out of budget', { jobId: job.id, rootId: job.rootId });
    const runnerId = paused.runnerId ?? job.runnerId;
    await recordStatus(o.store, o.bus, job.id, 'paused', `${message}`, now, runnerId ?? undefined);
    if (runnerId !== null && o.stop) {
      await o.stop(runnerId, pauseStop(job.id, paused.attempt));
    }
    if (needMicros === undefined) return;
    const resumed = await budgetResumer({ store: o.store, bus: o.bus, now: o.now, ...(o.kick ? { kick: o.kick } : {}) })(
      job.rootId,
      'tree',
      `job tree ${job.rootId}'s budget has room for the refused call (topped up while it was refused)`,
    );
    if (resumed.length) o.log.info('budget: topped up while a call was refused: resuming', { rootId: job.rootId, resumed: resumed.join(',') });
  };
}

/**
 * A top-up raised `raised` (tree `rootId`'s budget, or child `{ jobId }`'s sub-limit:
 * routes/jobs-budget.ts) — the one path that resumes budget-paused jobs. Only the jobs the
 * store's rule picks resume (store/budget-resume.ts: the raised budget is on the job's path and
 * every budget on its path has room for the call that was refused), so a top-up of one
 * sub-limit never restarts a sibling whose own sub-limit is still spent (a call a resumed job
 * could not make would only pause it again, at the cost of an attempt). A call kept out only
 * by calls in flight never pauses its job (gateway/budget-wait.ts). Of those: one whose
 * stopped attempt's process has not exited yet stays `paused` (endReason `budget_resume`) and
 * queues when the runner reports that exit (server/paused-exit.ts, the same rule checked again
 * then); the others go back to `queued` to resume their session, each with a `status` event
 * saying `why`; the dispatcher is kicked. `knownNeedOnly`: jobs whose need is not known are
 * left out (store listResumableBudgetPausedJobs; the periodic check, budget-sweep.ts).
 * @returns the ids of the jobs resumed (or to resume on their exit), ascending.
 */
export function budgetResumer(o: { store: Store; bus: EventBus; now: () => number; kick?: () => void }) {
  return async (rootId: number, raised: BudgetRaised, why: string, knownNeedOnly = false): Promise<number[]> => {
    const now = o.now();
    const ids = await o.store.listResumableBudgetPausedJobs(rootId, raised, knownNeedOnly);
    if (!ids.length) return [];
    // never two processes of one job at once: a held attempt resumes after its exit
    const deferred = await o.store.deferHeldBudgetResumes(rootId, ids);
    for (const r of deferred) {
      await recordStatus(o.store, o.bus, r.id, 'paused', `${why}; resumes once the process of its attempt ${r.attempt} has stopped`, now);
    }
    const resumed = [...(await o.store.resumeBudgetPausedJobs(rootId, now, ids)), ...deferred].sort((a, b) => a.id - b.id);
    for (const r of resumed) {
      if (r.status !== 'queued') continue;
      await recordStatus(o.store, o.bus, r.id, 'queued', `${why}; resuming${r.resumeSessionId ? ` session ${r.resumeSessionId}` : ''}`, now);
    }
    if (resumed.length) o.kick?.();
    return resumed.map((r) => r.id);
  };
}

/**
 * The gateway's `onResumedCallRecorded` hook: a call of `job`, which a top-up resumed and which
 * held the room of its refused call until now (store/budget-resume.ts resumedNeedHolds), was
 * recorded. The hold ends (store.endBudgetResumeHold), and the tree's paused jobs that the room
 * it leaves now fits resume ({@link budgetResumer}, as a top-up of the tree would): without
 * this, a sibling kept paused by the hold waited for a top-up nobody knew was needed. Nothing
 * when the job held nothing (ended already: a later call, another replica).
 */
export function resumeHoldEnder(o: { store: Store; bus: EventBus; log: Logger; now: () => number; kick?: () => void }) {
  return async (job: JobRow): Promise<void> => {
    const rootId = await o.store.endBudgetResumeHold(job.id);
    if (rootId === null) return;
    const resumed = await budgetResumer(o)(rootId, 'tree', `job ${job.id} made the call it was resumed for: the room it held is free`);
    if (resumed.length) o.log.info('budget: room freed by a resumed job\'s call: resuming', { rootId, resumed: resumed.join(',') });
  };
}

/**
 * The bus tap that frees the room a resumed job held when it ends without having made the call
 * it was resumed for (store/budget-resume.ts resumedNeedHolds: an ended job holds nothing): on
 * its `job.finished` (the runner's, or the server's for a job it ended: status-events.ts) or a
 * `lost` status, when the job still had its pause's need (`pausedNeedMicros`) and its tree has
 * jobs paused for budget, the tree's paused jobs that now fit resume ({@link budgetResumer}, as
 * for a top-up of the tree), unless the tree's root has ended. First the room it held on its
 * budgets' rows is written again from the jobs (store.syncBudgetHolds): the gateway's
 * reservations count it until then. Fresh-tester finding: a resumed job that succeeded (or was
 * cancelled) without calling again left its paused siblings waiting, with room, for a top-up.
 * Errors are logged.
 */
export function endedHoldTap(o: { store: Store; bus: EventBus; log: Logger; now: () => number; kick?: () => void }) {
  return (jobId: number, events: readonly JobEvent[]): void => {
    if (!events.some((e) => e.type === 'job.finished' || (e.type === 'status' && e.data.status === 'lost'))) return;
    void (async () => {
      const job = await o.store.getJob(jobId);
      if (!job || !isTerminal(job.status) || job.pausedNeedMicros == null) return;
      // the room it held on its budgets' rows is given back (store/budget-holds.ts)
      await o.store.syncBudgetHolds(job.rootId);
      // a tree whose root ended (a cancel on its way down the tree) resumes nothing
      const root = job.rootId === job.id ? job : await o.store.getJob(job.rootId);
      if (!root || isTerminal(root.status)) return;
      if (!(await o.store.listBudgetPausedJobs(job.rootId)).length) return;
      const resumed = await budgetResumer(o)(job.rootId, 'tree', `job ${job.id} ended (${job.status}) without the call it was resumed for: the room it held is free`);
      if (resumed.length) o.log.info('budget: room freed by an ended resumed job: resuming', { rootId: job.rootId, resumed: resumed.join(',') });
    })().catch((err: unknown) => o.log.error('could not resume the jobs an ended job left room for', { jobId, error: (err as Error).message }));
  };
}

/**
 * The reason a budget-paused attempt's stop carries (its `attempt.ended` error, the transcript's
 * "stopped for the budget pause" line). Which budget ran out — the tree's or a sub-limit of
 * the job or an ancestor — is the pause's status event's to say: "job tree out of budget" here
 * blamed the tree for a sub-limit's pause (fresh tester).
 */
export const PAUSE_STOP_REASON = 'paused for budget';

/** The stop a budget-paused attempt's runner gets (and gets again on heartbeats while the attempt holds it: hub.ts). */
export function pauseStop(jobId: number, attempt: number): Extract<ServerToRunner, { type: 'job.cancel' }> {
  return { type: 'job.cancel', jobId, attempt, reason: PAUSE_STOP_REASON, pause: true };
}
