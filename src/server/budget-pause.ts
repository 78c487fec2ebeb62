import type { Logger } from '../core/log.js';
import type { JobRow, Store } from '../store/types.js';
import type { AgentRegistry } from './agents.js';
import type { EventBus } from './event-bus.js';
import { recordStatus } from './status-events.js';

/**
 * The gateway's `onBudgetExhausted` hook (issue 3): a call of `job` was refused because its
 * tree is out of budget. Unless the job's agent says `onBudgetExhausted: fail`, the attempt
 * becomes `paused` (endReason `budget`, its token dies) with a `status` event, BEFORE the
 * refusal reaches the harness — so when the harness exits on the refusal and the runner
 * reports `failed`/`budget`, that report finds the job paused and changes nothing (the hub's
 * transition is conditional on assigned/running). With `fail`, the runner's report ends it
 * `failed` (reason `budget`).
 */
export function budgetPauser(o: { store: Store; agents: AgentRegistry; bus: EventBus; log: Logger; now: () => number }) {
  return async (job: JobRow, message: string): Promise<void> => {
    const policy = o.agents.get(job.agent)?.onBudgetExhausted ?? 'pause';
    if (policy === 'fail') return;
    const now = o.now();
    const paused = await o.store.pauseJobForBudget(job.id, job.attempt, message, now);
    if (!paused) return;
    o.log.info('job paused: tree out of budget', { jobId: job.id, rootId: job.rootId });
    await recordStatus(o.store, o.bus, job.id, 'paused', `${message}`, now, job.runnerId ?? undefined);
  };
}
