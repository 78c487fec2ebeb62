import type { StoreCtx } from './ctx.js';
import type { DispatchStore } from './dispatch-types.js';
import { claimJobsById } from './claim-batch.js';
import { listDispatchHead } from './dispatch-head.js';
import { listDispatchState } from './dispatch-state.js';
import { createRootJobWithEvent } from './job-enqueue.js';
import { applyRunnerFrame } from './runner-frame.js';
import { pgFrameBatcher } from './runner-frame-pg-batch.js';
import { appendEventsIfQueued } from './queued-events.js';

/** The dispatch hot path's part of the Store, bound to one context; spread into kyselyStore. */
export function dispatchMethods(c: StoreCtx): DispatchStore {
  // PostgreSQL: the runners' frames of one event-loop turn share one statement and commit.
  const frames = c.dialect === 'postgres' ? pgFrameBatcher(c) : null;
  return {
    createRootJobWithEvent: (j, ev, assign) => createRootJobWithEvent(c, j, ev, assign),
    claimJobsById: (claims, now) => claimJobsById(c, claims, now),
    listDispatchHead: (limit, now) => listDispatchHead(c, limit, now),
    listDispatchState: (limit, now) => listDispatchState(c, limit, now),
    applyRunnerFrame: (frame, now) => (frames ? applyRunnerFrame(c, frame, now, (_, q) => frames(q)) : applyRunnerFrame(c, frame, now)),
    appendEventsIfQueued: (events, now) => appendEventsIfQueued(c, events, now),
  };
}
