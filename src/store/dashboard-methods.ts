import type { StoreCtx } from './ctx.js';
import type { DashboardStore } from './dashboard-types.js';
import * as runnerEvents from './runner-events.js';
import * as runnerAttempts from './runner-attempts.js';
import * as conversation from './task-conversation.js';
import * as pages from './event-pages.js';
import * as settings from './settings.js';

/** The dashboard's part of the Store (issue 8, migration 0016), bound to one context; spread into kyselyStore. */
export function dashboardMethods(c: StoreCtx): DashboardStore {
  return {
    recordRunnerEvent: (id, e, now) => runnerEvents.recordRunnerEvent(c, id, e, now),
    listRunnerEvents: (id, limit, before) => runnerEvents.listRunnerEvents(c, id, limit, before),
    listRecentAttemptsForRunner: (id, limit) => runnerAttempts.listRecentAttemptsForRunner(c, id, limit),
    listTaskTurns: (id, limit, before) => conversation.listTaskTurns(c, id, limit, before),
    listTaskInputs: (id, q) => conversation.listTaskInputs(c, id, q),
    listJobMessages: (ids, limit) => pages.listJobMessages(c, ids, limit),
    listEventsBefore: (id, before, limit) => pages.listEventsBefore(c, id, before, limit),
    getSetting: (key) => settings.getSetting(c, key),
    setSetting: (key, value, now) => settings.setSetting(c, key, value, now),
  };
}
