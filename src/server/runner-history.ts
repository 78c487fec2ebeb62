import type { Logger } from '../core/log.js';
import type { RunnerEventKind } from '../store/dashboard-types.js';
import type { Store } from '../store/types.js';

/** What {@link noteRunner} needs. */
export interface RunnerHistoryDeps {
  store: Pick<Store, 'recordRunnerEvent'>;
  log: Logger;
  /** Server clock, epoch ms. */
  now: () => number;
}

/**
 * Adds a line to a runner's history (issue 8, runner page activity; store runner_events).
 * History is a record of what already happened: a failure to store it is logged and never
 * fails the change it describes (the hold, the disconnect, ...).
 */
export async function noteRunner(d: RunnerHistoryDeps, runnerId: number, kind: RunnerEventKind, text: string, jobId?: number): Promise<void> {
  try {
    await d.store.recordRunnerEvent(runnerId, { kind, text, jobId: jobId ?? null }, d.now());
  } catch (err) {
    d.log.warn('recording runner history failed', { runnerId, kind, err: String(err) });
  }
}
