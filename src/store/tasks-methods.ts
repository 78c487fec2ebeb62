import type { StoreCtx } from './ctx.js';
import type { TaskStore } from './tasks-types.js';
import * as tasks from './tasks.js';
import * as turns from './tasks-turns.js';
import * as receivers from './receivers.js';

/** The issue-7 part of the Store (tasks, turns, receivers), bound to one context; spread into kyselyStore. */
export function taskMethods(c: StoreCtx): TaskStore {
  return {
    createTask: (t) => tasks.createTask(c, t),
    getTask: (id) => tasks.getTask(c, id),
    listTasks: (q) => tasks.listTasks(c, q),
    findTaskByKey: (key, all) => tasks.findTaskByKey(c, key, all),
    updateTask: (id, from, set, now) => tasks.updateTask(c, id, from, set, now),
    completeTask: (id, now) => tasks.completeTask(c, id, now),
    addTaskBudget: (id, add, cap, now) => tasks.addTaskBudget(c, id, add, cap, now),
    taskOfTurnJob: (jobId) => tasks.taskOfTurnJob(c, jobId),
    reopenTask: (id, now) => tasks.reopenTask(c, id, now),
    enqueueTaskPrompt: (id, text, now) => turns.enqueueTaskPrompt(c, id, text, now),
    addTaskEvent: (id, e, now) => turns.addTaskEvent(c, id, e, now),
    listTaskEvents: (id, limit) => turns.listTaskEvents(c, id, limit),
    claimTaskTurn: (id, now) => turns.claimTaskTurn(c, id, now),
    attachTurnJob: (id, turn, jobId, now) => turns.attachTurnJob(c, id, turn, jobId, now),
    abandonTaskTurn: (id, turn, now) => turns.abandonTaskTurn(c, id, turn, now),
    listTaskTurnJobs: () => turns.listTaskTurnJobs(c),
    noteTaskEvent: (id, now) => turns.noteTaskEvent(c, id, now),
    listTrailingWakes: () => turns.listTrailingWakes(c),
    claimTrailingWake: (id, due, now) => turns.claimTrailingWake(c, id, due, now),
    listTaskSlots: (now) => tasks.listTaskSlots(c, now),
    createReceiver: (r) => receivers.createReceiver(c, r),
    listReceivers: () => receivers.listReceivers(c),
    getReceiver: (id) => receivers.getReceiver(c, id),
    findReceiverCredentials: (name) => receivers.findReceiverCredentials(c, name),
    deleteReceiver: (id) => receivers.deleteReceiver(c, id),
    ingestDelivery: (d) => receivers.ingestDelivery(c, d),
    ingestDeliveries: (ds) => receivers.ingestDeliveries(c, ds),
  };
}
