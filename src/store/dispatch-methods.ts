import type { StoreCtx } from './ctx.js';
import type { DispatchStore } from './dispatch-types.js';
import { claimJobsById } from './claim-batch.js';
import { listDispatchHead } from './dispatch-head.js';
import { createRootJobWithEvent } from './job-enqueue.js';
import { applyRunnerFrame } from './runner-frame.js';

/** The dispatch hot path's part of the Store, bound to one context; spread into kyselyStore. */
export function dispatchMethods(c: StoreCtx): DispatchStore {
  return {
    createRootJobWithEvent: (j, ev) => createRootJobWithEvent(c, j, ev),
    claimJobsById: (claims, now) => claimJobsById(c, claims, now),
    listDispatchHead: (limit, now) => listDispatchHead(c, limit, now),
    applyRunnerFrame: (frame, now) => applyRunnerFrame(c, frame, now),
  };
}
