import { afterAll, afterEach, describe } from 'vitest';
import type { Store } from './types.js';
import type { Harness } from './conformance/harness.js';
import { tokenTests } from './conformance/tokens.js';
import { registrationTokenTests } from './conformance/registration-tokens.js';
import { runnerTests } from './conformance/runners.js';
import { jobTests } from './conformance/jobs.js';
import { claimTests } from './conformance/claim.js';
import { sessionTests } from './conformance/sessions.js';
import { transitionTests } from './conformance/transitions.js';
import { eventTests } from './conformance/events.js';
import { sweepTests } from './conformance/sweep.js';
import { fleetTests } from './conformance/fleet.js';
import { capacityTests } from './conformance/capacity.js';
import { usageTests } from './conformance/usage.js';
import { budgetTests } from './conformance/budgets.js';
import { reservationTests } from './conformance/reservations.js';
import { jobBudgetTests } from './conformance/job-budgets.js';
import { budgetHoldTests } from './conformance/budget-holds.js';
import { roundTripTests } from './conformance/round-trip.js';
import { userTests } from './conformance/users.js';
import { taskTests } from './conformance/tasks.js';
import { taskIngestTests } from './conformance/task-ingest.js';
import { taskPendingTests } from './conformance/task-pending.js';
import { jobTreeTests } from './conformance/job-tree.js';
import { modelActivityTests } from './conformance/model-activity.js';
import { agentVersionTests } from './conformance/agent-versions.js';
import { effortTierTests } from './conformance/effort-tiers.js';
import { dashboardTests } from './conformance/dashboard.js';
import { dispatchBatchTests } from './conformance/dispatch-batch.js';
import { runnerFrameTests } from './conformance/runner-frame.js';
import { runnerAttemptTests } from './conformance/runner-attempts.js';
import { runnerClaimTests } from './conformance/runner-claims.js';
import { queuedEventTests } from './conformance/queued-events.js';
import { claimRunnerTests } from './conformance/claim-runner.js';
import { unstartedTests } from './conformance/unstarted.js';

/** Options of {@link runStoreConformance}. */
export interface ConformanceOptions {
  /**
   * Opens another instance over the same data as `s`, for the concurrency tests (PostgreSQL:
   * a new pool, as a second server process would have). Default: `s` itself (SQLite: one
   * writer per data folder, so concurrency is within one instance).
   */
  another?: (s: Store) => Promise<Store>;
  /** Runs once after the whole suite (e.g. remove temp folders). */
  cleanup?: () => Promise<void>;
}

/**
 * Registers the store conformance suite (vitest `describe(name)`): every test gets a fresh,
 * empty store from `makeStore()` and closes it afterwards. Run it once per engine
 * (sqlite.test.ts, postgres.test.ts). Expected values are worked out by hand in each test.
 */
export function runStoreConformance(name: string, makeStore: () => Promise<Store>, opts: ConformanceOptions = {}): void {
  describe(name, () => {
    const opened: Store[] = [];
    const h: Harness = {
      async open() {
        const s = await makeStore();
        opened.push(s);
        return s;
      },
      async another(s) {
        if (!opts.another) return s;
        const t = await opts.another(s);
        opened.push(t);
        return t;
      },
    };
    afterEach(async () => {
      const all = opened.splice(0);
      await Promise.all(all.map((s) => s.close()));
    });
    afterAll(async () => {
      await opts.cleanup?.();
    });
    tokenTests(h);
    registrationTokenTests(h);
    runnerTests(h);
    jobTests(h);
    claimTests(h);
    sessionTests(h);
    transitionTests(h);
    eventTests(h);
    sweepTests(h);
    fleetTests(h);
    capacityTests(h);
    usageTests(h);
    budgetTests(h);
    reservationTests(h);
    jobBudgetTests(h);
    budgetHoldTests(h);
    roundTripTests(h);
    userTests(h);
    taskTests(h);
    taskIngestTests(h);
    taskPendingTests(h);
    jobTreeTests(h);
    modelActivityTests(h);
    agentVersionTests(h);
    effortTierTests(h);
    dashboardTests(h);
    dispatchBatchTests(h);
    runnerFrameTests(h);
    runnerAttemptTests(h);
    runnerClaimTests(h);
    queuedEventTests(h);
    claimRunnerTests(h);
    unstartedTests(h);
  });
}
